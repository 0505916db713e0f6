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
  ["delete", "/v1/jobs/{id}"],
  ["post", "/v1/jobs/{id}:cancel"],
];
const missing = want.filter(([m, p]) => !(api.paths[p] && api.paths[p][m]));
if (missing.length) {
  console.error(`${file}: missing operations: ${missing.map(([m, p]) => `${m.toUpperCase()} ${p}`).join(", ")}`);
  process.exit(1);
}
console.log(`${file}: valid OpenAPI ${api.openapi}, ${Object.keys(api.paths).length} paths`);
