/**
 * `HostCaptureEngine`: DeepSeek Harness's basic compaction engine, with yiji capture before every summary.
 *
 * It overrides only `summarize`, the base engine's customization hook: first it awaits capture of every
 * visible message so far (`pre-summarize`), then lets the base engine summarize, then awaits capture again
 * (`pre-return`) before the summary is returned and the original turns leave the model's context. A capture
 * failure throws, so the compaction fails closed through the base engine's own error path
 * (`compaction/end` with an error); it is never skipped silently.
 *
 * Live messages arrive through `session/event` and are queued per session; a session that was resumed,
 * replayed or forked is backfilled from its log on `session/created`, from the cursor stored in yiji. No
 * language model is called for capture, and the engine never appends to a session.
 * @module
 */

import z from '@deepseek-ai/schemastery'
import { BasicCompactionEngine } from '@deepseek-ai/dsh-compaction-basic'
import { SessionCapture } from './queue.js'
import { SESSION_LOG_API } from './session-reader.js'

const INSTANCE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/
/** How long a live message waits before its capture call starts (a compaction in between takes it along). */
const EVENT_DELAY_MS = 200

/** Instance ids with a live engine in this process: one installation per instance id. */
const installed = new Set()

export class HostCaptureEngine extends BasicCompactionEngine {
  static inject = [...BasicCompactionEngine.inject]

  static Config = z.object({
    ...BasicCompactionEngine.Config.dict,
    instanceId: z.string().pattern(INSTANCE_ID).required()
      .description('This installation\'s id in yiji (1-64 letters, digits, . _ -); one installation per id.'),
    command: z.union([z.string(), z.array(z.string())]).default('yiji')
      .description('The yiji command, as a program name or an argument list (e.g. ["yiji", "--db", "/path/yiji.db"]).'),
    timeoutMs: z.natural().default(30000)
      .description('How long one `yiji host-ingest` call may take before it is killed and replayed later.'),
  })

  constructor(ctx, config = {}) {
    const { instanceId, command = 'yiji', timeoutMs = 30000, ...base } = config
    super(ctx, base)
    if (typeof instanceId !== 'string' || !INSTANCE_ID.test(instanceId)) {
      throw new Error('HostCaptureEngine: instanceId is required (1-64 letters, digits, ".", "_" or "-")')
    }
    const argv = typeof command === 'string' ? [command] : [...command]
    if (argv.length === 0 || argv.some((part) => typeof part !== 'string' || part === '')) {
      throw new Error('HostCaptureEngine: command must be a program name or a non-empty list of arguments')
    }
    if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
      throw new Error('HostCaptureEngine: timeoutMs must be a positive integer')
    }
    if (installed.has(instanceId)) {
      throw new Error(`HostCaptureEngine: instance id "${instanceId}" is already installed in this process; give each installation its own id`)
    }
    this.instanceId = instanceId
    this.command = argv
    this.timeoutMs = timeoutMs
    /** @type {Map<object, SessionCapture>} */
    this.captures = new Map()
    /** Milliseconds each summary waited for capture (pre-summarize + pre-return), newest last. */
    this.captureWaits = []
    this.logger = ctx.logger('yiji-host-capture')

    ctx.effect(() => {
      installed.add(instanceId)
      return () => {
        installed.delete(instanceId)
        for (const capture of this.captures.values()) capture.cancel()
      }
    }, 'yiji host capture installation')
    ctx.on('session/created', (session) => {
      this.captureFor(session).drain('backfill').catch((error) => this._report(error))
    })
    ctx.on('session/event', (session, event) => {
      const capture = this.captures.get(session)
      if (capture?.offer(event)) capture.schedule(EVENT_DELAY_MS, (error) => this._report(error))
    })
    ctx.on('session/disposed', (session) => {
      const capture = this.captures.get(session)
      if (capture === undefined) return
      capture.cancel()
      capture.drain('event').catch((error) => this._report(error)).finally(() => this.captures.delete(session))
    })
    this.logger.debug(`capturing visible messages as instance ${instanceId}; session log API: ${SESSION_LOG_API}`)
  }

  /**
   * The capture state of a session, created (and backfilled on its first drain) when first needed.
   * @param {object} session
   * @returns {SessionCapture}
   */
  captureFor(session) {
    let capture = this.captures.get(session)
    if (capture === undefined) {
      capture = new SessionCapture({
        session,
        instanceId: this.instanceId,
        command: this.command,
        timeoutMs: this.timeoutMs,
        logger: this.logger,
      })
      this.captures.set(session, capture)
    }
    return capture
  }

  async summarize(input, agent, signal) {
    const capture = this.captureFor(agent.session)
    let started = performance.now()
    await capture.drain('pre-summarize', signal)
    let waited = performance.now() - started
    const result = await super.summarize(input, agent, signal)
    started = performance.now()
    await capture.drain('pre-return', signal)
    waited += performance.now() - started
    this.captureWaits.push(waited)
    return result
  }

  _report(error) {
    // A conflict was logged as an error where it stopped capture; a failure is retried by the next drain.
    if (error?.name !== 'CaptureConflictError') this.logger.warn(error?.message ?? String(error))
  }
}

export default HostCaptureEngine
