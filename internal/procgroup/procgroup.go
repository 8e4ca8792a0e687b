// Package procgroup runs an agent command in a process group of its own,
// so that ending the agent ends whatever it started too: the drivers of
// pikit proxy run and pikit mcp run use it. On systems without process
// groups it acts on the process alone.
package procgroup
