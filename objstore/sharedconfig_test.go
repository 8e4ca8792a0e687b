package objstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadSharedConfig(t *testing.T) {
	const file = `[default]
region = eu-west-3

[profile minio]
region = us-east-2
endpoint_url = http://127.0.0.1:9000
`
	tests := []struct {
		name, profile, text string
		want                sharedConfig
	}{
		{"default profile", "", file, sharedConfig{region: "eu-west-3"}},
		{"named profile", "minio", file, sharedConfig{region: "us-east-2", endpoint: "http://127.0.0.1:9000"}},
		{"missing profile", "nope", file, sharedConfig{}},
		{"not ini", "", "\x00\x01[[[", sharedConfig{}},
		{"oversized", "", "[default]\nregion = x\n" + strings.Repeat("# pad\n", maxSharedConfig/6+1), sharedConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			t.Setenv("AWS_CONFIG_FILE", path)
			t.Setenv("AWS_PROFILE", tt.profile)
			if got := readSharedConfig(); got != tt.want {
				t.Errorf("readSharedConfig() = %+v, want %+v", got, tt.want)
			}
		})
	}
	t.Run("no file", func(t *testing.T) {
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
		if got := readSharedConfig(); got != (sharedConfig{}) {
			t.Errorf("readSharedConfig() = %+v, want nothing", got)
		}
	})
}
