// Validates an OpenAPI document against the OpenAPI 3.0 schema and checks the
// endpoints docjobs publishes are all described.
import SwaggerParser from "@apidevtools/swagger-parser";

const file = process.argv[2];
const api = await SwaggerParser.validate(file);
if (api.openapi !== "3.0.3") {
  console.error(`${file}: openapi is ${api.openapi}, want 3.0.3`);
  process.exit(1);
}
const want = [
  ["post", "/v1/jobs"],
  ["get", "/v1/jobs"],
  ["get", "/v1/jobs/{id}"],
  ["get", "/v1/jobs/{id}/result"],
  ["post", "/v1/jobs/upload"],
  ["get", "/v1/files/{id}"],
  ["delete", "/v1/files/{id}"],
  ["delete", "/v1/jobs/{id}"],
  ["post", "/v1/jobs/{id}:cancel"],
  ["get", "/v1/jobs/{id}/events"],
];
const missing = want.filter(([m, p]) => !(api.paths[p] && api.paths[p][m]));
if (missing.length) {
  console.error(`${file}: missing operations: ${missing.map(([m, p]) => `${m.toUpperCase()} ${p}`).join(", ")}`);
  process.exit(1);
}
// The upload is described as it is served: multipart in, snake_case out
// with an integer size, errors without details (spec, "POST /v1/jobs/upload").
const upload = api.paths["/v1/jobs/upload"].post;
const problems = [];
if (!upload.requestBody?.content?.["multipart/form-data"]?.schema?.properties?.file) {
  problems.push("upload: request body is not multipart/form-data with a `file` part");
}
const result = upload.responses["200"]?.content?.["application/json"]?.schema;
if (result?.properties?.size_bytes?.type !== "integer") {
  problems.push("upload: size_bytes is not an integer");
}
const uploadError = upload.responses.default?.content?.["application/json"]?.schema;
if (!uploadError?.properties?.code || uploadError.properties.details) {
  problems.push("upload: the error body is not {code, message} without details");
}
if (!api.paths["/v1/jobs/{id}/events"].get.responses["200"]?.content?.["text/event-stream"]) {
  problems.push("events: the answer is not text/event-stream");
}
// Skipped and failed rows of a consensus job carry `consensus: null` (spec,
// "Model answer row"): the schema every row's consensus refers to admits it.
const consensus = api.components.schemas.ConsensusResult;
if (consensus?.nullable !== true || consensus?.type !== "object") {
  problems.push("ConsensusResult is not a nullable object: rows with consensus null would not validate");
}
// A generated client sends the key (every operation needs it) and reads the
// headers the service answers with (audit-api3 F7).
const bearer = Object.entries(api.components?.securitySchemes ?? {})
  .find(([, s]) => s.type === "http" && s.scheme?.toLowerCase() === "bearer")?.[0];
if (!bearer || !(api.security ?? []).some((req) => bearer in req)) {
  problems.push("no HTTP bearer scheme required by the document's security");
}
for (const [method, path] of want) {
  const op = api.paths[path][method];
  const name = `${method.toUpperCase()} ${path}`;
  if (op.security) {
    problems.push(`${name}: overrides the document's security`);
  }
  const headers = (code) => Object.keys(op.responses[code]?.headers ?? {});
  if (!headers("401").includes("WWW-Authenticate")) {
    problems.push(`${name}: no 401 with WWW-Authenticate`);
  }
  for (const code of ["429", "503"]) {
    if (!headers(code).includes("Retry-After")) {
      problems.push(`${name}: no ${code} with Retry-After`);
    }
  }
  // The event stream and the download read nothing of the request they
  // could ignore; every other operation names what it ignored.
  const readsRequest = !(method === "get" && ["/v1/jobs/{id}/events", "/v1/files/{id}"].includes(path));
  if (readsRequest && !headers("200").includes("Docjobs-Warning")) {
    problems.push(`${name}: its 200 does not declare Docjobs-Warning`);
  }
}
for (const path of ["/v1/jobs/{id}", "/v1/files/{id}"]) {
  if (!api.paths[path].delete.responses["200"]?.content?.["application/json"]) {
    problems.push(`DELETE ${path}: the {} answer is not application/json`);
  }
}
if (api.paths["/v1/jobs/{id}:cancel"].post.requestBody?.required) {
  problems.push("cancel: the body is described as required; none is needed");
}
if (problems.length) {
  console.error(`${file}: ${problems.join("; ")}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
