/**
 * A ChatModel over any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama,
 * LM Studio, OpenRouter, ...): one deadline per call, retries with backoff where a retry can
 * help, a circuit breaker in front of the endpoint, and usage recorded per trace.
 */
import { ErrorCode, HermesError } from "../../mesh/errors.ts";
import { Backoff, type BackoffOptions } from "../supervisor/backoff.ts";
import type { ChatModel, ChatRequest, ChatResponse } from "./chat-types.ts";
import { CircuitBreaker, type CircuitBreakerOptions } from "./circuit-breaker.ts";
import { fromWireResponse, toWireRequest } from "./openai-wire.ts";
import type { UsageLedger } from "./usage-ledger.ts";

/** Options of `OpenAICompatibleModel`. */
export interface OpenAICompatibleOptions {
  /** The model's name as a ChatModel (logs, errors). Default "openai". */
  name?: string;
  /** Up to and including the version, e.g. "http://127.0.0.1:11434/v1". Default env OPENAI_BASE_URL, else https://api.openai.com/v1. */
  baseUrl?: string;
  /** Sent as `Authorization: Bearer`; none sent when empty. Default env OPENAI_API_KEY. */
  apiKey?: string;
  /** Deadline of one `complete()` call, retries and waits included, in ms. Default 60,000. */
  timeoutMs?: number;
  /** HTTP attempts per call, the first included. Default 3. */
  maxAttempts?: number;
  /** Delays between attempts when the server gives no Retry-After. Default 500 ms doubling to 8 s, ±20%. */
  backoff?: BackoffOptions;
  /** Longest Retry-After honoured, in ms; longer ones are cut to this. Default 30,000. */
  maxRetryAfterMs?: number;
  /** A breaker to share between clients of one endpoint, or options for a breaker of this client's own. */
  breaker?: CircuitBreaker | CircuitBreakerOptions;
  /** Where usage is summed per `trace_id`, under the requested model's name. */
  ledger?: UsageLedger;
  /** Extra request headers (e.g. OpenRouter's HTTP-Referer). */
  headers?: Record<string, string>;
  /** Where the defaults come from. Default process.env. */
  env?: Record<string, string | undefined>;
  /** How to wait between attempts; tests inject one to see the delays without waiting them. */
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** A failed HTTP attempt, before it becomes the call's HermesError. */
class AttemptError extends Error {
  constructor(
    readonly kind: "rate_limited" | "server" | "network" | "final",
    readonly error: HermesError,
    readonly retryAfterMs?: number,
  ) {
    super(error.message);
  }
  /** Rate limits and client errors say the endpoint is up; only these say it is not. */
  get countsAgainstEndpoint(): boolean {
    return this.kind === "server" || this.kind === "network" || this.error.code === ErrorCode.INTERNAL;
  }
}

/**
 * `POST ${baseUrl}/chat/completions` with the OpenAI wire format (see openai-wire.ts).
 * Errors are HermesErrors: 3 deadline passed; 5 HTTP 401/403; 2 HTTP 400 and other 4xx, with
 * the server's message; 8 HTTP 404 (no such model or endpoint); 7 a body that is not a chat
 * completion; 11 still rate limited (429) after the last attempt; 10 5xx or network errors
 * after the last attempt, or the circuit open. The API key never appears in an error.
 *
 * @example
 * const model = new OpenAICompatibleModel({ baseUrl: "http://127.0.0.1:11434/v1", timeoutMs: 30_000 });
 * const { message, usage } = await model.complete({ model: "llama3.1", messages: [{ role: "user", content: "hi" }] });
 */
export class OpenAICompatibleModel implements ChatModel {
  readonly name: string;
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxAttempts: number;
  readonly maxRetryAfterMs: number;
  readonly breaker: CircuitBreaker;
  #apiKey: string;
  #options: OpenAICompatibleOptions;

  constructor(options: OpenAICompatibleOptions = {}) {
    const env = options.env ?? process.env;
    this.name = options.name ?? "openai";
    this.baseUrl = (options.baseUrl ?? env.OPENAI_BASE_URL ?? "https://api.openai.com/v1").replace(/\/+$/, "");
    this.#apiKey = options.apiKey ?? env.OPENAI_API_KEY ?? "";
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
    this.breaker = options.breaker instanceof CircuitBreaker
      ? options.breaker
      : new CircuitBreaker({ name: `${this.name} ${this.baseUrl}`, ...options.breaker });
    this.#options = { ...options, backoff: { initialMs: 500, maxMs: 8000, ...options.backoff } };
    new Backoff(this.#options.backoff); // refuses bad backoff options now rather than at the first retry
    if (!(Number.isInteger(this.maxAttempts) && this.maxAttempts >= 1 && this.timeoutMs > 0)) {
      throw new HermesError(ErrorCode.INVALID_REQUEST, "bad OpenAI client options", {
        reason: "bad OpenAI client options",
        expected: "maxAttempts an integer >= 1, timeoutMs > 0",
      });
    }
  }

  /** One chat completion, retried as the class comment says. */
  async complete(request: ChatRequest): Promise<ChatResponse> {
    const deadline = AbortSignal.timeout(this.timeoutMs);
    const signal = request.signal ? AbortSignal.any([request.signal, deadline]) : deadline;
    const body = JSON.stringify(toWireRequest(request));
    const backoff = new Backoff(this.#options.backoff);
    const sleep = this.#options.sleep ?? abortableSleep;
    const startedAt = Date.now();
    const countsAgainst = (error: unknown) =>
      error instanceof AttemptError ? error.countsAgainstEndpoint : deadline.aborted && !request.signal?.aborted;
    for (let attempt = 1; ; attempt++) {
      let failure: AttemptError;
      try {
        const response = await this.breaker.run(() => this.#attempt(body, request.model, signal), countsAgainst);
        if (request.trace_id) this.#options.ledger?.record(request.trace_id, request.model, response.usage);
        return response;
      } catch (error) {
        if (signal.aborted) throw this.#aborted(request.signal, attempt, error);
        if (!(error instanceof AttemptError)) throw error; // the circuit is open: code 10 already
        failure = error;
      }
      const delay = failure.retryAfterMs !== undefined ? Math.min(failure.retryAfterMs, this.maxRetryAfterMs) : backoff.next();
      // No retry that could not finish before the deadline: the server's answer beats a timeout.
      if (failure.kind === "final" || attempt >= this.maxAttempts || Date.now() - startedAt + delay >= this.timeoutMs) {
        throw this.#exhausted(failure, attempt, failure.retryAfterMs ?? delay);
      }
      try {
        await sleep(delay, signal);
      } catch (error) {
        throw this.#aborted(request.signal, attempt, error);
      }
    }
  }

  async #attempt(body: string, model: string, signal: AbortSignal): Promise<ChatResponse> {
    const url = `${this.baseUrl}/chat/completions`;
    const headers: Record<string, string> = { "content-type": "application/json", ...this.#options.headers };
    if (this.#apiKey) headers.authorization = `Bearer ${this.#apiKey}`;
    let response: Response;
    try {
      response = await fetch(url, { method: "POST", headers, body, signal });
    } catch (error) {
      if (signal.aborted) throw error;
      const detail = this.#scrub(`${this.name}: POST ${url} failed: ${(error as Error).message}`);
      throw new AttemptError("network", new HermesError(ErrorCode.UNAVAILABLE, detail, { reason: "network error" }, { cause: error }));
    }
    const text = await response.text();
    if (!response.ok) throw this.#httpError(response, text, url, model);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = json === undefined ? "the body is not JSON" : fromWireResponse(json, model);
    if (typeof parsed !== "string") return parsed;
    const detail = this.#scrub(`${this.name}: POST ${url} answered HTTP ${response.status} with no chat completion (${parsed}): ${text.slice(0, 200)}`);
    throw new AttemptError("final", new HermesError(ErrorCode.INTERNAL, detail, { reason: "malformed response", status: response.status }));
  }

  #httpError(response: Response, text: string, url: string, model: string): AttemptError {
    const status = response.status;
    const message = this.#scrub(serverMessage(text) || response.statusText);
    const detail = `${this.name}: POST ${url} answered HTTP ${status}: ${message}`;
    const fields = { status, reason: message };
    if (status === 429) {
      const retryAfterMs = parseRetryAfter(response.headers);
      return new AttemptError("rate_limited", new HermesError(ErrorCode.RATE_LIMIT_EXCEEDED, detail, fields), retryAfterMs);
    }
    if (status >= 500) return new AttemptError("server", new HermesError(ErrorCode.UNAVAILABLE, detail, fields), parseRetryAfter(response.headers));
    if (status === 401 || status === 403) {
      return new AttemptError("final", new HermesError(ErrorCode.AUTH_FAILED, detail, { ...fields, auth_method: "bearer" }));
    }
    if (status === 404) return new AttemptError("final", new HermesError(ErrorCode.UNROUTABLE, detail, { ...fields, target: model, known: [] }));
    return new AttemptError("final", new HermesError(ErrorCode.INVALID_REQUEST, detail, fields));
  }

  /** The error a call ends with once no attempt is left. */
  #exhausted(failure: AttemptError, attempts: number, retryAfterMs: number): HermesError {
    if (failure.kind === "final") return failure.error;
    const { code, message, fields } = failure.error;
    const detail = `${message} (gave up after ${attempts} attempt${attempts === 1 ? "" : "s"})`;
    return new HermesError(code, detail, { ...fields, attempts, retry_after_ms: Math.round(retryAfterMs) }, { cause: failure.error.cause });
  }

  #aborted(callerSignal: AbortSignal | undefined, attempts: number, cause: unknown): HermesError {
    if (callerSignal?.aborted) {
      if (callerSignal.reason instanceof HermesError) return callerSignal.reason;
      return new HermesError(ErrorCode.TASK_TIMEOUT, `${this.name}: the call was cancelled by its caller`, { reason: "cancelled", attempts }, { cause });
    }
    return new HermesError(ErrorCode.TASK_TIMEOUT, `${this.name}: no answer within ${this.timeoutMs} ms (${attempts} attempt${attempts === 1 ? "" : "s"})`, {
      timeout_ms: this.timeoutMs,
      attempts,
    });
  }

  /** Servers echo keys in auth errors (OpenAI masks them, proxies may not): never pass one on. */
  #scrub(text: string): string {
    return this.#apiKey.length >= 4 ? text.replaceAll(this.#apiKey, "[redacted]") : text;
  }
}

/**
 * The wait a response asks for, in ms: `retry-after-ms` (OpenAI's own), else `Retry-After` as
 * seconds or as an HTTP date; undefined when there is none or it cannot be read.
 *
 * @example
 * parseRetryAfter(new Headers({ "retry-after": "2" })); // 2000
 */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | undefined {
  const ms = Number(headers.get("retry-after-ms")?.trim() || Number.NaN);
  if (Number.isFinite(ms)) return Math.max(0, ms);
  const value = headers.get("retry-after")?.trim();
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** The message in an error body: `{ error: { message } }` (OpenAI), `{ error }`, `{ message }`, or the text. */
function serverMessage(text: string): string {
  try {
    const json = JSON.parse(text);
    const message = json?.error?.message ?? json?.error ?? json?.message ?? json?.detail;
    if (typeof message === "string") return message;
  } catch {
    // not JSON: the text itself, shortened
  }
  return text.slice(0, 300);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
