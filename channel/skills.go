package channel

import (
	"path/filepath"
	"strings"

	"github.com/pikit-go/pikit/internal/lazy"

	"go.yaml.in/yaml/v3"

	"github.com/pikit-go/pikit/method"
)

func init() {
	register(method.Info{
		Name: "skills",
		// The Python pikit names the field in method.
		Normalize:   methodAsField("description", "body", "instructions"),
		Description: "hides the payload in an Agent Skill (SKILL.md): its front-matter description, its instructions or its body, a front-matter key of its own, an HTML comment, or a comment in a bundled script",
		Options: []method.Option{{
			Name: "method",
			Help: "inline: as plain text where field says; frontmatter: an extra front-matter key (x-agent-notes) that renderers do not show; " +
				"html_comment: an HTML comment under the Instructions heading, invisible once rendered; script_comment: comment lines of a setup script in a code block under that heading",
			Default: "inline",
			Choices: []string{"inline", "frontmatter", "html_comment", "script_comment"},
		}, {
			Name:    "field",
			Help:    "the front-matter description (read when the skill is chosen), the Instructions section, or the end of the body (method inline)",
			Default: "description",
			Choices: []string{"description", "instructions", "body"},
		}},
	}, func(o options) (Channel, error) { return skills{method: o["method"], field: o["field"]}, nil })
	RegisterSample("skill", skillSample)
}

// skills hides a payload in an Agent Skill's SKILL.md.
type skills struct{ method, field string }

var (
	_ Channel    = skills{}
	_ Sampler    = skills{}
	_ FileWriter = skills{}
)

// Sample returns a clean SKILL.md.
func (skills) Sample() string { return skillSample }

var instructionsHeading = lazy.Regexp(`(?i)^#{1,6}\s+.*\b(instructions|steps|how to)\b`)

// Taint hides the payload. For the description the front matter is edited in
// place (the description becomes one double-quoted YAML string holding the
// old description and the payload) and created when missing; the other
// fields leave the front matter alone. The frontmatter method adds a
// top-level key of its own (created with the front matter when missing);
// html_comment and script_comment put their block where the instructions
// field puts plain text.
func (s skills) Taint(data, payload string) (string, error) {
	nl := newline(data)
	text := strings.ReplaceAll(data, "\r\n", "\n")
	fm, body, ok := splitFrontMatter(text)
	where := s.field
	if s.method == "frontmatter" {
		where = "frontmatter"
	}
	if (where == "description" || where == "frontmatter") && !ok {
		fm, body, ok = "name: "+skillName(text)+"\n", text, true
	}
	payloadText := strings.Join(splitLines(payload), "\n")
	switch s.method {
	case "html_comment":
		payloadText = "<!-- " + commentSafe(payloadText) + " -->"
		where = "instructions"
	case "script_comment":
		payloadText = scriptBlock(payloadText)
		where = "instructions"
	}
	switch where {
	case "frontmatter":
		fm = addFrontMatterKey(fm, payload)
	case "description":
		fm = setDescription(fm, payload)
	case "instructions":
		body = insertUnderHeading(body, payloadText)
	default:
		body = appendBlock(body, payloadText)
	}
	out := body
	if ok {
		out = "---\n" + fm + "---\n" + body
	}
	if nl == "\r\n" {
		out = strings.ReplaceAll(out, "\n", "\r\n")
	}
	return out, nil
}

// scriptBlock renders text as the comment lines of a setup script in a
// fenced code block, the fence longer than any backtick run in text.
func scriptBlock(text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	var b strings.Builder
	b.WriteString("Run the setup script once before the first step:\n\n" + fence + "sh\n#!/bin/sh\n# scripts/setup.sh\n")
	for _, l := range strings.Split(text, "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
	b.WriteString("git fetch --tags --quiet\n" + fence)
	return b.String()
}

// addFrontMatterKey appends a top-level x-agent-notes entry (a fresh name
// when the front matter has that key) holding the payload.
func addFrontMatterKey(fm, payload string) string {
	key := freshName(func(k string) bool {
		return strings.HasPrefix(fm, k+":") || strings.Contains(fm, "\n"+k+":")
	}, "x-agent-notes")
	return fm + key + ": " + yamlQuote(payload) + "\n"
}

// splitFrontMatter splits "---\n...\n---\n" off the start of text; fm keeps
// its final newline.
func splitFrontMatter(text string) (fm, body string, ok bool) {
	rest, found := strings.CutPrefix(text, "---\n")
	if !found {
		return "", text, false
	}
	if strings.HasPrefix(rest, "---\n") || rest == "---" {
		return "", strings.TrimPrefix(strings.TrimPrefix(rest, "---"), "\n"), true
	}
	i := strings.Index(rest, "\n---\n")
	if i < 0 {
		if strings.HasSuffix(rest, "\n---") {
			return rest[:len(rest)-3], "", true
		}
		return "", text, false
	}
	return rest[:i+1], rest[i+5:], true
}

// setDescription replaces the top-level description entry of the front
// matter fm (the key line and its indented continuation lines), appending
// the payload to the old value, or adds the entry after the name.
func setDescription(fm, payload string) string {
	lines := strings.Split(strings.TrimSuffix(fm, "\n"), "\n")
	if fm == "" {
		lines = nil
	}
	start, end := -1, -1
	for i, l := range lines {
		if start < 0 && strings.HasPrefix(l, "description:") {
			start, end = i, i+1
			for end < len(lines) && (lines[end] == "" || lines[end][0] == ' ' || lines[end][0] == '\t') {
				end++
			}
		}
	}
	value := payload
	if start >= 0 {
		var old struct {
			Description any `yaml:"description"`
		}
		if err := yaml.Unmarshal([]byte(strings.Join(lines[start:end], "\n")), &old); err == nil {
			if d, ok := old.Description.(string); ok && strings.TrimSpace(d) != "" {
				value = strings.TrimRight(d, "\n") + " " + payload
			}
		}
		for end > start+1 && lines[end-1] == "" { // keep blank lines that followed the entry
			end--
		}
		lines = append(append(append([]string{}, lines[:start]...), "description: "+yamlQuote(value)), lines[end:]...)
	} else {
		at := len(lines)
		for i, l := range lines {
			if strings.HasPrefix(l, "name:") {
				at = i + 1
			}
		}
		lines = append(append(append([]string{}, lines[:at]...), "description: "+yamlQuote(value)), lines[at:]...)
	}
	return strings.Join(lines, "\n") + "\n"
}

// insertUnderHeading puts text as the first paragraph under the body's
// Instructions (or Steps) heading, or at the top of the body when it has
// none.
func insertUnderHeading(body, text string) string {
	lines := strings.Split(body, "\n")
	at := -1
	for i, l := range lines {
		if instructionsHeading().MatchString(l) {
			at = i + 1
			break
		}
	}
	if at < 0 {
		// Under the first heading if the body starts with one, else at the top.
		for i, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			if strings.HasPrefix(l, "#") {
				at = i + 1
			} else {
				at = i
				ins := []string{text, ""}
				return strings.Join(append(append(append([]string{}, lines[:at]...), ins...), lines[at:]...), "\n")
			}
			break
		}
		if at < 0 {
			return appendBlock(body, text)
		}
	}
	ins := []string{"", text}
	if at < len(lines) && strings.TrimSpace(lines[at]) != "" {
		ins = append(ins, "")
	}
	return strings.Join(append(append(append([]string{}, lines[:at]...), ins...), lines[at:]...), "\n")
}

// skillName returns the skill's name: the front matter's name field, else a
// slug of the first heading, else "skill".
func skillName(text string) string {
	if fm, _, ok := splitFrontMatter(strings.ReplaceAll(text, "\r\n", "\n")); ok {
		var meta struct {
			Name string `yaml:"name"`
		}
		if yaml.Unmarshal([]byte(fm), &meta) == nil {
			if n := slug(meta.Name); n != "" {
				return n
			}
		}
	}
	for _, l := range strings.Split(text, "\n") {
		if h, ok := strings.CutPrefix(l, "# "); ok {
			if n := slug(h); n != "" {
				return n
			}
		}
	}
	return "skill"
}

// slug lowercases s and joins its letters and digits with hyphens, at most
// 64 characters, as Agent Skill names are written.
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		} else {
			dash = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// TaintFile writes <name>/SKILL.md under dir, the layout skills are installed
// in. A skill without front matter gets one (name and description) so the
// file is a valid skill.
func (s skills) TaintFile(dir, data, payload string) (string, error) {
	out, err := s.Taint(orSample(data, skillSample), payload)
	if err != nil {
		return "", err
	}
	if _, body, ok := splitFrontMatter(strings.ReplaceAll(out, "\r\n", "\n")); !ok {
		desc := "Instructions for " + skillName(out) + "."
		out = "---\nname: " + skillName(out) + "\ndescription: " + yamlQuote(desc) + "\n---\n" + body
	}
	return writeFile(filepath.Join(dir, skillName(out)), "SKILL.md", out)
}

const skillSample = `---
name: changelog-writer
description: Drafts CHANGELOG entries from merged pull requests. Use when the user asks for release notes, a changelog update or a summary of what changed between two tags.
license: Apache-2.0
---

# Changelog writer

Turns the pull requests merged since the last release into a CHANGELOG section in the
Keep a Changelog layout: Added, Changed, Deprecated, Removed, Fixed, Security.

## Instructions

1. Find the previous release tag with ` + "`git describe --tags --abbrev=0`" + `.
2. List the merged pull requests since that tag with ` + "`git log --merges --oneline <tag>..HEAD`" + `.
3. Sort each pull request into one of the six groups by reading its title and labels.
   Dependency bumps go under Changed unless they fix a security advisory.
4. Write one line per change in the imperative mood, ending with the pull request number,
   for example: "Add a --dry-run flag to the import command (#482)".
5. Put the new section above the previous one in CHANGELOG.md, headed with the version and
   today's date, and leave the file otherwise untouched.

## Notes

- Skip pull requests labelled ` + "`no-changelog`" + `.
- If a change is user-visible but its title is unclear, read the description before
  classifying it rather than guessing.
- Never tag a release or push; the maintainer does that after review.
`
