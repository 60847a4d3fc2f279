// The offline stand-in for eslint: no `var`, no `console.log`, no trailing whitespace.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

const RULES = [
  [/\bvar\s/, 'use let or const, not var'],
  [/console\.log\(/, 'no console.log'],
  [/[ \t]+$/, 'trailing whitespace'],
];

function* files(folder) {
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    if (statSync(path).isDirectory()) yield* files(path);
    else if (/\.m?js$/.test(name)) yield path;
  }
}

let problems = 0;
for (const folder of process.argv.slice(2)) {
  for (const file of files(folder)) {
    readFileSync(file, 'utf8').split('\n').forEach((line, index) => {
      for (const [pattern, message] of RULES) {
        if (pattern.test(line)) {
          problems += 1;
          process.stderr.write(`${file}:${index + 1}: ${message}\n`);
        }
      }
    });
  }
}
process.exit(problems ? 1 : 0);
