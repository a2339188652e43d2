package framework

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// EveryController is the owner of a status entry every controller writes (InvalidSpec).
const EveryController = "*"

// StatusContract is the "Who writes what" table of docs/status-contract.md: for each
// kind, the field manager that owns each status entry. An entry is "status.<field>" or
// "condition <Type>".
type StatusContract map[string]map[string]string

var backticked = regexp.MustCompile("`([^`]+)`")

// ReadStatusContract parses the table from the document at path.
func ReadStatusContract(path string) (StatusContract, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	c := StatusContract{}
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## Who writes what"
			continue
		case !in || !strings.HasPrefix(line, "| `"):
			continue
		}
		cols := strings.Split(strings.Trim(line, "|"), "|")
		if len(cols) < 3 {
			return nil, fmt.Errorf("%s: a row with %d columns: %s", path, len(cols), line)
		}
		owner := strings.TrimSpace(cols[2])
		if strings.HasPrefix(owner, "every controller") {
			owner = EveryController
		}
		var kinds []string
		switch on := strings.TrimSpace(cols[1]); on {
		case "both":
			kinds = []string{"ValkeyCluster", "ValkeyNode"}
		default:
			kinds = []string{on}
		}
		for _, m := range backticked.FindAllStringSubmatch(cols[0], -1) {
			entry := contractEntry(m[1])
			for _, k := range kinds {
				if c[k] == nil {
					c[k] = map[string]string{}
				}
				c[k][entry] = owner
			}
		}
	}
	return c, sc.Err()
}

// contractEntry turns a name of the table (`Ready`, `status.shards`, `podIP`) into an
// entry: conditions start with a capital letter, the rest are status fields.
func contractEntry(name string) string {
	name = strings.TrimPrefix(name, "status.")
	if name != "" && name[0] >= 'A' && name[0] <= 'Z' {
		return "condition " + name
	}
	return "status." + name
}

// StatusOwners reads an object's managedFields: for each status entry, the field
// managers that own it.
func StatusOwners(obj metav1.Object) (map[string][]string, error) {
	out := map[string][]string{}
	for _, mf := range obj.GetManagedFields() {
		if mf.FieldsV1 == nil {
			continue
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(mf.FieldsV1.GetRawBytes(), &top); err != nil {
			return nil, fmt.Errorf("managed fields of %s: %w", mf.Manager, err)
		}
		status := map[string]json.RawMessage{}
		if raw, ok := top["f:status"]; ok {
			if err := json.Unmarshal(raw, &status); err != nil {
				return nil, fmt.Errorf("managed status fields of %s: %w", mf.Manager, err)
			}
		}
		for key, raw := range status {
			name := strings.TrimPrefix(key, "f:")
			if name == "conditions" {
				var conds map[string]json.RawMessage
				if err := json.Unmarshal(raw, &conds); err != nil {
					return nil, fmt.Errorf("managed conditions of %s: %w", mf.Manager, err)
				}
				for k := range conds {
					var id struct{ Type string }
					if v, ok := strings.CutPrefix(k, "k:"); ok && json.Unmarshal([]byte(v), &id) == nil && id.Type != "" {
						out["condition "+id.Type] = append(out["condition "+id.Type], mf.Manager)
					}
				}
				continue
			}
			out["status."+name] = append(out["status."+name], mf.Manager)
		}
	}
	return out, nil
}

// Check compares the status entries an object of kind holds, with their managers, with
// the contract, and returns the disagreements: an entry the table does not list for that
// kind, or written by a manager other than its owner.
func (c StatusContract) Check(kind string, owners map[string][]string) []string {
	var out []string
	for entry, managers := range owners {
		owner, ok := c[kind][entry]
		if !ok {
			out = append(out, fmt.Sprintf("%s %s (written by %s) is not in the table", kind, entry, strings.Join(managers, ", ")))
			continue
		}
		for _, m := range managers {
			if owner != EveryController && m != owner {
				out = append(out, fmt.Sprintf("%s %s is written by %s; the table says %s", kind, entry, m, owner))
			}
		}
	}
	sort.Strings(out)
	return out
}

// CheckStatusContract compares who wrote each status entry of the cluster and of its
// members with docs/status-contract.md, and fails the test on any disagreement.
func (k *Cluster) CheckStatusContract(ctx context.Context, t testing.TB, vc *v1alpha1.ValkeyCluster) {
	t.Helper()
	c, err := ReadStatusContract(filepath.Join(k.Paths.RepoRoot, "docs", "status-contract.md"))
	if err != nil {
		t.Fatal(err)
	}
	var now v1alpha1.ValkeyCluster
	if err := k.Client.Get(ctx, client.ObjectKeyFromObject(vc), &now); err != nil {
		t.Fatal(err)
	}
	objs := []struct {
		kind string
		obj  metav1.Object
	}{{"ValkeyCluster", &now}}
	for _, m := range k.Members(ctx, t, vc) {
		objs = append(objs, struct {
			kind string
			obj  metav1.Object
		}{"ValkeyNode", &m})
	}
	checked := 0
	for _, o := range objs {
		owners, err := StatusOwners(o.obj)
		if err != nil {
			t.Fatal(err)
		}
		checked += len(owners)
		for _, problem := range c.Check(o.kind, owners) {
			t.Errorf("status contract: %s %s: %s", o.kind, o.obj.GetName(), problem)
		}
	}
	t.Logf("status contract: %d status entries of %d objects match docs/status-contract.md", checked, len(objs))
}
