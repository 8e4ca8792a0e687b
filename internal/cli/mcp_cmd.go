package cli

import "github.com/spf13/cobra"

func newMCPCmd(streams IO) *cobra.Command {
	return &cobra.Command{Use: "mcp", Short: "Serve pikit's scenarios as a poisoned MCP server (not built yet)", Hidden: true}
}
