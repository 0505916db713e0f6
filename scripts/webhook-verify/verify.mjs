// Verifies one webhook request with the standardwebhooks reference library,
// an implementation independent of internal/webhook. Reads from stdin
//   {"secret": "...", "headers": {"webhook-id": "...", ...}, "body": "..."}
// and exits 0 when the signature verifies, 1 with the reason otherwise.
import { Webhook } from "standardwebhooks";

let input = "";
for await (const chunk of process.stdin) input += chunk;

try {
  const { secret, headers, body } = JSON.parse(input);
  if (typeof secret !== "string" || typeof body !== "string" || typeof headers !== "object" || headers === null) {
    throw new Error("stdin must be {secret: string, headers: object, body: string}");
  }
  // A secret without the whsec_ prefix is its own key. The library's raw
  // format turns a string into bytes one UTF-16 unit at a time (Latin-1),
  // so hand it the UTF-8 bytes docjobs keys with.
  const wh = secret.startsWith("whsec_")
    ? new Webhook(secret)
    : new Webhook(new TextEncoder().encode(secret), { format: "raw" });
  const event = wh.verify(body, headers);
  console.log(`verified ${headers["webhook-id"]}: ${event?.type ?? "(no type)"}`);
} catch (err) {
  console.error(`not verified: ${err.message}`);
  process.exit(1);
}
