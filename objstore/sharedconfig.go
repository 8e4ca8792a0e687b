package objstore

import (
	"io"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/ini.v1"
)

// sharedConfig is what pikit reads of the AWS shared config file
// (~/.aws/config, or AWS_CONFIG_FILE) for the profile in use (AWS_PROFILE,
// else default): its region and its endpoint_url.
type sharedConfig struct {
	region   string
	endpoint string
}

// maxSharedConfig bounds the shared config file.
const maxSharedConfig = 1 << 20

// readSharedConfig reads the shared config; a missing, unreadable or
// oversized file gives nothing (the environment and defaults then hold).
func readSharedConfig() sharedConfig {
	path := os.Getenv("AWS_CONFIG_FILE")
	if path == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return sharedConfig{}
		}
		path = filepath.Join(home, ".aws", "config")
	}
	f, err := os.Open(path)
	if err != nil {
		return sharedConfig{}
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSharedConfig+1))
	if err != nil || len(b) > maxSharedConfig {
		return sharedConfig{}
	}
	cfg, err := ini.Load(b)
	if err != nil {
		return sharedConfig{}
	}
	profile := strings.TrimSpace(os.Getenv("AWS_PROFILE"))
	section := "default"
	if profile != "" && profile != "default" {
		section = "profile " + profile
	}
	sec, err := cfg.GetSection(section)
	if err != nil {
		return sharedConfig{}
	}
	return sharedConfig{
		region:   strings.TrimSpace(sec.Key("region").String()),
		endpoint: strings.TrimSpace(sec.Key("endpoint_url").String()),
	}
}
