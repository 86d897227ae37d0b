/** Which requests the gateway's listener hands to the invoke route before hono sees them. */
import { describe, expect, test } from "bun:test";
import { isInvokeRequest } from "../../src/gateway/invoke-route.ts";

const at = (url: string, method = "POST") => isInvokeRequest(new Request(url, { method }));

describe("isInvokeRequest", () => {
  test("takes POST /hermes/v1/invoke on any host and port, with or without a query", () => {
    expect(at("http://127.0.0.1:8000/hermes/v1/invoke")).toBe(true);
    expect(at("http://localhost/hermes/v1/invoke?token=x")).toBe(true);
    expect(at("https://[::1]:9443/hermes/v1/invoke?")).toBe(true);
    expect(at("http://gw.example.com/hermes/v1/invoke")).toBe(true);
    expect(at("http://127.0.0.1/hermes/v1/%69nvoke?x=%zz")).toBe(true); // percent-encoded, as hono decodes it
  });

  test("leaves every other method and path to hono (its 404, preflight or route)", () => {
    for (const method of ["GET", "OPTIONS", "PUT", "DELETE", "HEAD"]) expect({ method, taken: at("http://127.0.0.1/hermes/v1/invoke", method) }).toEqual({ method, taken: false });
    for (const path of ["/hermes/v1/invoke/", "/hermes/v1/invokes", "/hermes/v1/invok", "/hermes/v1/stream", "/", "/x/hermes/v1/invoke", "/HERMES/v1/invoke"]) {
      expect({ path, taken: at(`http://127.0.0.1:8000${path}`) }).toEqual({ path, taken: false });
    }
    expect(at("http://127.0.0.1/hermes/v1/%zznvoke")).toBe(false); // not decodable
    expect(at("http://127.0.0.1/hermes/v1/invoke%2F")).toBe(false);
    // A host that looks like the path is still a host.
    expect(at("http://hermes/v1/invoke")).toBe(false);
  });
});
