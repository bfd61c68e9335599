/**
 * What the process does with an error nobody caught. Left to Node, either one ends the process
 * at once, with the server and the database never closed.
 *
 * - A rejected promise nobody waited on is logged and the process carries on: it ends only the
 *   async task it belonged to, which has unwound as from any handled error (database writes are
 *   transactions), and one forgotten catch in a background refresh should not stop every
 *   transfer and sync in the process.
 * - An exception thrown out of a callback is logged, then the process stops: it left its work
 *   half done, so what that work held can no longer be trusted. `shutdown` is the entry's own
 *   stop path (close the server and the database, exit with a non-zero code); a second
 *   exception meanwhile, or a stop taking longer than 10 s, ends the process at once.
 */
export function installProcessGuard(shutdown: () => unknown): void {
  let rejections = 0;
  let failing = false;
  process.on('unhandledRejection', (reason) => {
    rejections += 1;
    console.error(`Tributary: unhandled promise rejection (${rejections} since start), carrying on:`, reason);
  });
  process.on('uncaughtException', (error) => {
    console.error('Tributary: uncaught exception:', error);
    if (failing) {
      console.error('Tributary: this happened while stopping; exiting at once.');
      process.exit(1);
    }
    failing = true;
    // Should the event loop empty before the stop path exits, the code still says it failed.
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 10_000).unref();
    void (async () => {
      try {
        await shutdown();
      } catch (e) {
        console.error('Tributary: stopping failed:', e);
        process.exit(1);
      }
    })();
  });
}
