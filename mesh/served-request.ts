import { createErrorReply, createReply } from "../src/protocol/envelope-factory.ts";
import { isPlainMap } from "../src/protocol/envelope-check.ts";
import type { Envelope, Payload } from "../src/protocol/envelope.ts";
import { ErrorCode } from "../src/protocol/error-codes.ts";
import { HermesError } from "../src/protocol/hermes-error.ts";
import { MessageType } from "../src/protocol/message-types.ts";
import type { RequestContext } from "./request-channel.ts";

/**
 * One request being handled: the handler's context, and the guarantee that exactly one answer
 * goes back (response, error, timeout or cancel, whichever comes first). The AbortController
 * and the deadline timer cost more than the rest of a round trip, so the controller is made
 * only when a handler reads `signal`, and the timer only when the handler goes async.
 */
export class ServedRequest implements RequestContext {
  readonly deadline: number;
  /** The request being answered. */
  get request(): Envelope {
    return this.#request;
  }

  /** True once an answer (of any kind) has gone. */
  get done(): boolean {
    return this.#done;
  }

  /** The answer that went (response or error), once done. */
  get answer(): Envelope | undefined {
    return this.#answerEnvelope;
  }

  #request: Envelope;
  #node: string;
  #answer: (reply: Envelope) => void;
  #sendProgress: (payload: Payload) => void;
  #controller: AbortController | undefined;
  #abortReason: HermesError | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #done = false;
  #answerEnvelope: Envelope | undefined;

  constructor(request: Envelope, deadline: number, answer: (reply: Envelope) => void, sendProgress: (payload: Payload) => void, node: string) {
    this.#request = request;
    this.deadline = deadline;
    this.#answer = answer;
    this.#sendProgress = sendProgress;
    this.#node = node;
  }

  /** Aborted when the sender cancels, the ttl runs out or the connection closes. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#abortReason) this.#controller.abort(this.#abortReason);
    }
    return this.#controller.signal;
  }

  progress(payload: Payload): void {
    if (!this.#done) this.#sendProgress(payload);
  }

  /** Arms the ttl deadline: only needed once the handler has gone async. */
  startDeadline(): void {
    if (this.#done) return;
    const ttl = this.#request.ttl;
    this.#timer = setTimeout(() => {
      this.abort(new HermesError(ErrorCode.TASK_TIMEOUT, `handler did not finish within the ttl of ${ttl} ms`, { timeout_ms: ttl }));
    }, Math.max(0, this.deadline - Date.now()));
  }

  respond(payload: Payload): void {
    if (!isPlainMap(payload)) {
      this.fail(new HermesError(ErrorCode.INTERNAL, "handler returned a payload that is not a map"));
      return;
    }
    this.#finish(createReply(MessageType.RESPONSE, this.#request, this.#node, payload));
  }

  fail(error: unknown): void {
    this.#finish(createErrorReply(this.#request, this.#node, HermesError.from(error)));
  }

  /** Stops the handler (signal) and answers with `reason` now; a late result is dropped. */
  abort(reason: HermesError): void {
    if (this.#done) return;
    this.#abortReason = reason;
    // A cancelled request still gets an answer, so the sender's bookkeeping always closes.
    this.#finish(createErrorReply(this.#request, this.#node, reason));
    this.#controller?.abort(reason);
  }

  #finish(reply: Envelope): void {
    if (this.#done) return;
    this.#done = true;
    this.#answerEnvelope = reply;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#answer(reply);
  }
}
