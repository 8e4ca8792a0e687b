package cli

import "github.com/spf13/cobra"

func newProxyCmd(streams IO) *cobra.Command {
	return &cobra.Command{Use: "proxy", Short: "Intercept a real agent's model traffic (not built yet)", Hidden: true}
}
