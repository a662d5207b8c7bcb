/**
 * The Temporal SDK as the tests want it: quiet in a green run. Several tests make activities fail
 * on purpose, retry them, or replay histories that must fail as non-deterministic; the SDK logs
 * each of those at WARN, its native core straight to the terminal, which would bury the report.
 * Errors are still logged, and a test that goes wrong says so through its assertions.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';

/** A logger for `MockActivityEnvironment` (`{ logger: quietLogger }`): errors only. */
export const quietLogger = new DefaultLogger('ERROR');

/**
 * Installs this process's Temporal runtime with errors-only logging, the TypeScript side and the
 * native core alike. Once per process, before any worker or replay starts (the runtime cannot be
 * installed twice: a second call throws).
 */
export function installQuietRuntime(): void {
  Runtime.install({ logger: quietLogger, telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
}
