package report

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

const chromiumPath = "/usr/bin/chromium"

// chromium runs headless Chromium on a page with the flags that keep it off
// the network, returning its standard output.
func chromium(t *testing.T, page string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
	}
	cmd := exec.CommandContext(ctx, chromiumPath, append(append(base, args...), "file://"+page)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.Bytes())
	}
	return stdout.Bytes()
}

func skipWithoutChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a browser; skipped with -short")
	}
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Skip("no Chromium at " + chromiumPath)
	}
}

// TestHTMLBrowserScreenshot renders the golden page in headless Chromium.
func TestHTMLBrowserScreenshot(t *testing.T) {
	skipWithoutChromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, renderHTML(t, htmlGoldenResults(t), htmlGoldenOptions), 0o644); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "report.png")
	chromium(t, page, "--window-size=1280,2000", "--screenshot="+png)
	b, err := os.ReadFile(png)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10<<10 {
		t.Errorf("the screenshot is %d bytes, not a page's PNG", len(b))
	}
}

// TestHTMLBrowserScript checks that the page's script runs under its own
// Content-Security-Policy: it shows the search box, filters rows by the
// box's text, and copies shared texts and repeated traces into opened
// traces.
func TestHTMLBrowserScript(t *testing.T) {
	skipWithoutChromium(t)
	res := htmlGoldenResults(t)
	res = append(res, htmlRunCells(t, `attacks = ["naive"]
agents = ["email"]
repeats = 2`)...)
	out := string(renderHTML(t, res, htmlGoldenOptions))
	// Open every trace and type in the box before the script runs.
	out = strings.ReplaceAll(out, "<details>", "<details open>")
	out = strings.Replace(out, `<input id="q" type="search"`, `<input id="q" type="search" value="full_success"`, 1)
	page := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(page, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(chromium(t, page, "--dump-dom"))
	if strings.Contains(dom, `id="search" hidden`) {
		t.Error("the script did not run: the search box is still hidden")
	}
	matching := 0
	for _, r := range res {
		if strings.Contains(string(r.Outcome), "full_success") {
			matching++
		}
	}
	if want := " of " + strconv.Itoa(len(res)) + " cells match"; !strings.Contains(dom, strconv.Itoa(matching)+want) {
		t.Errorf("the filter did not report %d%s", matching, want)
	}
	if n := len(regexp.MustCompile(`<tbody[^>]* hidden`).FindAllString(dom, -1)); n != len(res)-matching {
		t.Errorf("%d rows hidden by the filter, want %d", n, len(res)-matching)
	}
	if n := strings.Count(dom, "data-filled"); n == 0 || strings.Count(dom, `class="ref"`) == 0 {
		t.Errorf("opened traces got nothing copied in (%d filled)", n)
	}
	if strings.Count(dom, `class="tv"`) <= strings.Count(out, `class="tv"`) {
		t.Error("a repeated trace was not copied into the cell that refers to it")
	}
}
