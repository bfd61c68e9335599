/**
 * Fairness between cheap and costly requests. A request's handler runs in the event-loop turn
 * that read it, so when 100 connections each send a folder listing, a metadata request read in
 * the same turn waits for all 100 listings. Costly routes therefore pass through a TurnQueue:
 * at most `perTurn` of them start in one turn, the rest start on later turns (setImmediate), and
 * between those turns Node reads the sockets again, so every other request is answered within
 * about one batch of costly work. An idle server starts a costly request at once.
 */
export class TurnQueue {
  private readonly waiting: (() => void)[] = [];
  /** Started since the last turn of the queue: what the current turn may still start. */
  private started = 0;
  private scheduled = false;

  constructor(private readonly perTurn: number) {}

  /** Resolves when the caller may start its work. */
  enter(): Promise<void> {
    if (this.started < this.perTurn && this.waiting.length === 0) {
      this.started++;
      this.schedule();
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  /** How many wait for a later turn. */
  get queued(): number {
    return this.waiting.length;
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.turn());
  }

  private turn(): void {
    this.scheduled = false;
    const batch = this.waiting.splice(0, this.perTurn);
    this.started = batch.length;
    for (const start of batch) start();
    // A full batch ran in this turn: the next may start only after Node has read the sockets.
    if (batch.length) this.schedule();
  }
}
