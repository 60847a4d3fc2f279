// Hidden tests: the agent's work is in workspace/ (the `#workspace/*` import alias of package.json);
// each subtask's outcome goes to workspace/results/word-stats.json for partial credit.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const gradingDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const resultsPath = join(gradingDir, 'workspace', 'results', 'word-stats.json');
const outcomes = new Map();

let module;
try {
  module = await import('#workspace/wordStats.js');
} catch (error) {
  module = { loadError: error };
}

function task(taskId, check) {
  outcomes.set(taskId, false);
  test(taskId, () => {
    if (module.loadError) throw module.loadError;
    check(module);
    outcomes.set(taskId, true);
  });
}

task('count-simple', (m) => assert.equal(m.countWords('a b c'), 3));
task('count-whitespace', (m) => assert.equal(m.countWords(' a \n b\t\tc  '), 3));
task('count-empty', (m) => assert.equal(m.countWords('   '), 0));
task('top-words', (m) => assert.deepEqual(m.topWords('b a B c b a', 2), [['b', 3], ['a', 2]]));
task('top-words-ties', (m) => assert.deepEqual(m.topWords('z y x', 2), [['x', 1], ['y', 1]]));

after(() => {
  mkdirSync(dirname(resultsPath), { recursive: true });
  const results = [...outcomes].map(([taskId, passed]) => ({ taskId, passed }));
  writeFileSync(resultsPath, JSON.stringify(results, null, 2), 'utf8');
});
