package target

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/joho/godotenv"
)

// DotEnvFile is the file LoadDotEnv reads when given no path.
const DotEnvFile = ".env"

// LoadDotEnv sets environment variables from a .env file (KEY=value
// lines), so API keys can live in an uncommitted file beside the configs.
// The real environment wins: a variable that is already set to a
// non-empty value is left alone. A missing file is not an error. An empty
// path means DotEnvFile in the working directory.
//
// The CLI calls it once at start-up; nothing in this package calls it.
// Parse errors never quote the file, which holds secrets.
func LoadDotEnv(path string) error {
	if path == "" {
		path = DotEnvFile
	}
	vars, err := godotenv.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("%s: %w", path, pe.Err)
		}
		return fmt.Errorf("%s: not a valid .env file: %s", path, dotEnvProblem(err))
	}
	for k, v := range vars {
		if os.Getenv(k) != "" {
			continue
		}
		if err := os.Setenv(k, v); err != nil {
			return fmt.Errorf("%s: setting %s: %w", path, k, err)
		}
	}
	return nil
}

// dotEnvProblem keeps the part of a godotenv parse error that names the
// problem and drops the part that quotes the file's text.
func dotEnvProblem(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, " near "); i >= 0 {
		msg = msg[:i]
	}
	if strings.HasPrefix(msg, "unterminated quoted value") {
		msg = "unterminated quoted value"
	}
	return Redact(msg)
}
