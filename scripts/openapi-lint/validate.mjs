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
if (problems.length) {
  console.error(`${file}: ${problems.join("; ")}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
