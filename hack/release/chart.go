package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// setChartVersion sets the top-level version and appVersion of a Chart.yaml.
func setChartVersion(file, version string) error {
	return editLines(file, func(lines []string) error {
		found := map[string]bool{}
		for i, l := range lines {
			for _, key := range []string{"version", "appVersion"} {
				if strings.HasPrefix(l, key+":") {
					lines[i] = key + ": " + strconv.Quote(version)
					found[key] = true
				}
			}
		}
		if !found["version"] || !found["appVersion"] {
			return fmt.Errorf("%s: no top-level version and appVersion", file)
		}
		return nil
	})
}

// setValuesImage sets registry and repository of the top-level image block of a
// values.yaml, and empties its tag so that it defaults to the chart's appVersion.
func setValuesImage(file, registry, repository string) error {
	return editLines(file, func(lines []string) error {
		in := false
		found := map[string]bool{}
		for i, l := range lines {
			if l == "image:" {
				in = true
				continue
			}
			if in && l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "#") {
				break
			}
			if !in {
				continue
			}
			for key, v := range map[string]string{"registry": registry, "repository": repository, "tag": ""} {
				if strings.HasPrefix(l, "  "+key+":") {
					lines[i] = "  " + key + ": " + strconv.Quote(v)
					found[key] = true
				}
			}
		}
		if !found["registry"] || !found["repository"] || !found["tag"] {
			return fmt.Errorf("%s: no image block with registry, repository and tag", file)
		}
		return nil
	})
}

func editLines(file string, edit func([]string) error) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(string(b), "\n")
	if err := edit(lines); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644)
}
