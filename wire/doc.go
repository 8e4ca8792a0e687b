// Package wire holds the model APIs' request and reply bodies as small
// typed structs: OpenAI's Chat Completions and Anthropic's Messages, as
// pikit sends and reads them. The network targets encode and decode
// through these types, and the proxy answers in them for a local target.
// The official SDKs are not linked into pikit: a separate module
// (conformance/) checks these types against them.
package wire
