// Package exportcase makes dataset cases of the winning injections of
// adaptive searches (pikit export-case): each result's winning candidate,
// replayed with the fixed attack under the cell's defense, channel, agent
// and target, with what the result does not record copied from the config
// or dataset it came from (--from). The cases are dataset write-side
// values (dataset.FileCase, the scenario tables they name copied as
// dataset.File.ScenarioTables), written with dataset.Encode, which reads
// them back through dataset.Parse before a byte is handed out; the
// command (internal/cli) keeps the flags, the selection of results, the
// warnings and the I/O.
package exportcase
