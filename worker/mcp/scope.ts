// What happens once an MCP response has left: ack the human's answer only after the response body was read
// to its end by the runtime (the answer is on its way to the client), otherwise leave it kept in the session
// for await_answer or an identical retry. Then close the request's LineUp connections.
export class RequestScope {
  private readonly delivered: (() => void)[] = [];
  private readonly ended: (() => void)[] = [];
  private done = false;

  /** `waitUntil` of the request: work that must finish after the response (an ack on a fresh connection). */
  constructor(private readonly waitUntil: (p: Promise<unknown>) => void = () => {}) {}

  /** Keeps `p` running after the response has ended. */
  keep(p: Promise<unknown>): void {
    this.waitUntil(p.catch(() => undefined));
  }

  /** Runs once the whole response was handed to the client. */
  onDelivered(f: () => void): void {
    if (this.done) return;
    this.delivered.push(f);
  }

  /** Runs when the response ends, delivered or not. */
  onEnd(f: () => void): void {
    if (this.done) return f();
    this.ended.push(f);
  }

  end(delivered: boolean): void {
    if (this.done) return;
    this.done = true;
    for (const f of delivered ? this.delivered : []) safely(f);
    for (const f of this.ended) safely(f);
  }

  /**
   * The response with its body watched. `highWaterMark: 0` makes `pull` run only when the runtime reads, so
   * reaching the source's end in `pull` means every earlier chunk was taken by the consumer.
   */
  wrap(res: Response): Response {
    if (!res.body) {
      this.end(res.ok);
      return res;
    }
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          try {
            const { done, value } = await reader.read();
            if (done) {
              this.end(true);
              controller.close();
            } else controller.enqueue(value);
          } catch (e) {
            this.end(false);
            controller.error(e);
          }
        },
        cancel: (reason) => {
          this.end(false);
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  }
}

function safely(f: () => void): void {
  try {
    f();
  } catch {
    /* a closed socket: nothing to undo */
  }
}
