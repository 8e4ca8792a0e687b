// Package procgroup runs an agent command in a process group of its own,
// so that ending the agent ends whatever it started too, and keeps the
// bounded tail of its output (Tail). The drivers of pikit proxy run, pikit
// mcp run and the agent runtimes use it. On systems without process groups
// it acts on the process alone.
package procgroup
