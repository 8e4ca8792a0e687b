package target

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
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
	_, err := LoadDotEnvVars(path)
	return err
}

// LoadDotEnvVars is LoadDotEnv, returning the names of the variables it
// set (sorted): the CLI reports a base URL that came from a .env file,
// since keys go wherever it points.
func LoadDotEnvVars(path string) ([]string, error) {
	if path == "" {
		path = DotEnvFile
	}
	vars, err := godotenv.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w", path, pe.Err)
		}
		return nil, fmt.Errorf("%s: not a valid .env file: %s", path, dotEnvProblem(err))
	}
	var set []string
	for k, v := range vars {
		if os.Getenv(k) != "" {
			continue
		}
		if err := os.Setenv(k, v); err != nil {
			return set, fmt.Errorf("%s: setting %s: %w", path, k, err)
		}
		set = append(set, k)
	}
	sort.Strings(set)
	return set, nil
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
