/**
 * One call of `yiji host-ingest` as a child process: JSON lines in, one JSON line out.
 *
 * Outcomes: `ok` (committed, `cursor` is the new stored cursor), `conflict` (exit 3: nothing was written,
 * `cursor` is the stored one), or `failed` (any other exit, a timeout, an abort, unreadable output): the
 * batch may or may not have committed, so the caller keeps it and replays the same ids.
 * Never logs message text.
 * @module
 */

import { spawn } from 'node:child_process'

/**
 * @typedef {{kind: 'ok' | 'conflict', cursor: number, conflict?: string} |
 *   {kind: 'failed', reason: string}} IngestOutcome
 */

/**
 * Run the CLI once.
 * @param {object} options
 * @param {readonly string[]} options.command - program and leading arguments, e.g. `['yiji']`.
 * @param {string} options.instanceId
 * @param {string} options.sessionId
 * @param {number | null} options.expectCursor - `null` only reads the stored cursor.
 * @param {string} options.reason - event, pre-summarize, pre-return or backfill.
 * @param {readonly object[]} options.lines
 * @param {number} options.timeoutMs
 * @param {AbortSignal} [options.signal]
 * @returns {Promise<IngestOutcome>}
 */
export function runHostIngest({ command, instanceId, sessionId, expectCursor, reason, lines, timeoutMs, signal }) {
  const [program, ...leading] = command
  const args = [...leading, 'host-ingest', '--instance', instanceId, '--session', sessionId, '--reason', reason]
  if (expectCursor !== null) args.push('--expect-cursor', String(expectCursor))
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve({ kind: 'failed', reason: 'aborted before start' })
      return
    }
    let child
    try {
      child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'], signal, timeout: timeoutMs, killSignal: 'SIGKILL' })
    } catch (error) {
      resolve({ kind: 'failed', reason: `could not start the command (${error.code ?? error.name})` })
      return
    }
    let stdout = ''
    let stderr = ''
    let settled = false
    const finish = (outcome) => {
      if (!settled) {
        settled = true
        resolve(outcome)
      }
    }
    child.stdout.setEncoding('utf8').on('data', (chunk) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk) => { stderr += chunk })
    child.on('error', (error) => {
      const why = error.name === 'AbortError' ? 'aborted' : `could not run the command (${error.code ?? error.name})`
      finish({ kind: 'failed', reason: why })
    })
    child.on('close', (code, killedBy) => {
      if (signal?.aborted) return finish({ kind: 'failed', reason: 'aborted' })
      if (killedBy !== null) return finish({ kind: 'failed', reason: `killed by ${killedBy} (timeout ${timeoutMs} ms or crash)` })
      let ack
      try {
        ack = JSON.parse(stdout.trim().split('\n').at(-1) ?? '')
      } catch {
        ack = undefined
      }
      if ((code === 0 || code === 3) && ack && typeof ack.cursor === 'number') {
        return finish(code === 0 && ack.ok === true
          ? { kind: 'ok', cursor: ack.cursor }
          : { kind: 'conflict', cursor: ack.cursor, conflict: ack.conflict ?? 'cursor' })
      }
      // The CLI's error line names a field and a rule, never a value; keep only its first line.
      const detail = stderr.trim().split('\n')[0]?.slice(0, 300) ?? ''
      finish({ kind: 'failed', reason: `exit ${code}${detail ? `: ${detail}` : ''}` })
    })
    child.stdin.on('error', () => {}) // a CLI that exits early closes the pipe; its exit code tells the rest
    child.stdin.end(lines.map((line) => JSON.stringify(line) + '\n').join(''))
  })
}
