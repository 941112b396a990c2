// Package infra holds the deployment description's checks: its tests hold
// template.yaml, the SAM build targets of the Makefile, infra/env.json (for
// `sam local start-api --env-vars infra/env.json`) and the sample events
// functions/*/event.json to the code they deploy, and invoke each function's
// Lambda handler with its event on a real PostgreSQL, in process and as
// the real bootstrap under the Lambda Runtime Interface Emulator. Its one
// piece of code outside the tests writes template.yaml's routes from the
// route table (RewriteRoutes, run by ./routegen: the HTTP API's OpenAPI
// body and one invoke permission per function), so a route is written once.
package infra
