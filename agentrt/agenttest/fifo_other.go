//go:build !unix

package agenttest

import "errors"

func mkfifo(string) error { return errors.New("no named pipes here") }
