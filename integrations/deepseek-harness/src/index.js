/**
 * yiji host capture for DeepSeek Harness. The default export is the compaction engine plugin; load it in
 * place of `@deepseek-ai/dsh-compaction-basic` (see `cordis.patch.yml`).
 * @module
 */

export { HostCaptureEngine, HostCaptureEngine as default } from './engine.js'
export { CaptureConflictError, CaptureFailedError, SessionCapture } from './queue.js'
export { runHostIngest } from './ingest.js'
export { SESSION_LOG_API, eventsAfter, inheritedCount } from './session-reader.js'
export { eventId, joinText, toVisible } from './visible.js'
