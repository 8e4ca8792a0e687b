package agenttest

import (
	"os"
	"path/filepath"
)

// EnvInstallLog names the file the fake npm and openclaw of
// WriteInstallTools append their calls and environments to.
const EnvInstallLog = "PIKIT_FAKE_INSTALL_LOG"

// fakeNPM plays npm with no network: it logs how it was called and its
// environment, runs package.json's preinstall script as npm does (unless
// --ignore-scripts), and for ci or install lays out a node_modules/.bin
// whose tsc (writing dist/index.js) and openclaw log their calls too.
const fakeNPM = `#!/bin/sh
log="$` + EnvInstallLog + `"
echo "npm $* (in $PWD)" >> "$log"
env >> "$log"
case " $* " in
*" --ignore-scripts "*) ;;
*)
	pre=$(sed -n 's/.*"preinstall": *"\([^"]*\)".*/\1/p' package.json)
	[ -n "$pre" ] && sh -c "$pre"
	;;
esac
case "$1" in
ci | install)
	mkdir -p node_modules/.bin
	printf '#!/bin/sh\necho "tsc $*" >> "$%s"\nenv >> "$%s"\nmkdir -p dist && echo "export {};" > dist/index.js\n' ` + EnvInstallLog + ` ` + EnvInstallLog + ` > node_modules/.bin/tsc
	printf '#!/bin/sh\necho "local openclaw $*" >> "$%s"\nenv >> "$%s"\n' ` + EnvInstallLog + ` ` + EnvInstallLog + ` > node_modules/.bin/openclaw
	chmod +x node_modules/.bin/tsc node_modules/.bin/openclaw
	;;
esac
`

// fakeOpenClaw plays the user's openclaw: it logs its calls and
// environment.
const fakeOpenClaw = `#!/bin/sh
echo "openclaw $*" >> "$` + EnvInstallLog + `"
env >> "$` + EnvInstallLog + `"
`

// WriteInstallTools writes a fake npm and a fake openclaw (POSIX shell
// scripts) into dir, for tests of installing the OpenClaw fixture plugin
// without a network: put dir first on PATH, set EnvInstallLog, and pass
// the returned openclaw as the runtime's program. Each logs a line per
// call ("npm ci … (in DIR)", "tsc …", "local openclaw …", "openclaw …")
// and then its whole environment, so a test can look for a secret there.
// The fake npm runs a package.json's preinstall script as npm does,
// unless given --ignore-scripts.
func WriteInstallTools(dir string) (openclaw string, err error) {
	for name, script := range map[string]string{"npm": fakeNPM, "openclaw": fakeOpenClaw} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "openclaw"), nil
}
