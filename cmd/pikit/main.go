// Command pikit evaluates prompt-injection attacks and defenses against
// models and agents. See "pikit --help".
package main

import (
	"os"

	"github.com/pikit-go/pikit/internal/cli"
)

func main() { os.Exit(cli.Main()) }
