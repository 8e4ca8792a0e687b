// Package conformance checks pikit's wire formats against the official
// SDKs and OpenAI's published API description, outside pikit's own build:
// this module requires openai-go and anthropic-sdk-go so that pikit
// itself need not. Its tests decode every request pikit's targets send
// into the SDKs' parameter types and compare it with the body the SDK
// sends for the same conversation, feed the targets replies as the SDKs
// encode them, validate request bodies against the OpenAPI schema, and
// read pikit's own answers (the proxy's model handler, streamed and not)
// with the SDKs' clients. Run it with `cd conformance && go test ./...`
// (make test-all, .ci/run).
package conformance
