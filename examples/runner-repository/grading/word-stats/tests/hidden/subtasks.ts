// Partial credit: each subtask is a test, and every subtask of a module is written, passed or not, to
// workspace/results/<module>.json (a list of {taskId, passed}) once the module's tests are done.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, it } from 'vitest';

const resultsDir = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'workspace', 'results');

type Task = (taskId: string, check: () => Promise<void> | void) => void;

/** A `task` function for `module`'s subtasks, whose outcomes go to workspace/results/<module>.json. */
export function subtasks(module: string): Task {
  const outcomes = new Map<string, boolean>();
  afterAll(() => {
    mkdirSync(resultsDir, { recursive: true });
    const results = [...outcomes].map(([taskId, passed]) => ({ taskId, passed }));
    writeFileSync(join(resultsDir, `${module}.json`), `${JSON.stringify(results, null, 2)}\n`, 'utf8');
  });
  return (taskId, check) => {
    outcomes.set(taskId, false);
    it(taskId, async () => {
      await check();
      outcomes.set(taskId, true);
    });
  };
}
