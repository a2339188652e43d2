// Package health evaluates a ValkeyCluster the way GitOps tools do: Flux (and kpt) with
// kstatus, Argo CD with the custom health script docs/status-contract.md ships. The e2e
// operate suite runs both on live objects during a roll; the unit tests run them on
// status objects the cluster-controller wrote (testdata).
package health

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// Kstatus is kstatus' verdict on an object (Current, InProgress, Failed, ...).
func Kstatus(obj map[string]any) (status.Status, string, error) {
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		return "", "", err
	}
	return res.Status, res.Message, nil
}

// ArgoCDScript returns the Argo CD health script from docs/status-contract.md: the Lua
// block between the markers <!-- begin argocd-health --> and <!-- end argocd-health -->.
func ArgoCDScript() (string, error) {
	_, here, _, _ := runtime.Caller(0)
	doc, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "docs", "status-contract.md"))
	if err != nil {
		return "", err
	}
	text := string(doc)
	begin, end := "<!-- begin argocd-health -->", "<!-- end argocd-health -->"
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i < 0 || j < i {
		return "", errors.New("docs/status-contract.md has no argocd-health block")
	}
	block := text[i+len(begin) : j]
	start := strings.Index(block, "```lua\n")
	stop := strings.LastIndex(block, "```")
	if start < 0 || stop <= start {
		return "", errors.New("the argocd-health block holds no ```lua code")
	}
	return block[start+len("```lua\n") : stop], nil
}

// ArgoCD runs the health script as Argo CD does: the object as the global obj, the
// script returning a table with status and message.
func ArgoCD(script string, obj map[string]any) (healthStatus, message string, err error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: false})
	defer L.Close()
	L.SetGlobal("obj", toLua(L, obj))
	if err := L.DoString("return (function()\n" + script + "\nend)()"); err != nil {
		return "", "", fmt.Errorf("run the health script: %w", err)
	}
	tbl, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the health script returned %s, not a table", L.Get(-1).Type())
	}
	return lua.LVAsString(tbl.RawGetString("status")), lua.LVAsString(tbl.RawGetString("message")), nil
}

// toLua converts decoded JSON into Lua values (objects and arrays are tables, as Argo CD
// passes them).
func toLua(L *lua.LState, v any) lua.LValue {
	switch x := v.(type) {
	case map[string]any:
		t := L.NewTable()
		for k, e := range x {
			t.RawSetString(k, toLua(L, e))
		}
		return t
	case []any:
		t := L.NewTable()
		for _, e := range x {
			t.Append(toLua(L, e))
		}
		return t
	case string:
		return lua.LString(x)
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case int64:
		return lua.LNumber(x)
	case json.Number:
		f, _ := x.Float64()
		return lua.LNumber(f)
	case nil:
		return lua.LNil
	}
	return lua.LString(fmt.Sprint(v))
}

// Object turns a typed object into the map both tools read (integers as int64, as the
// API machinery decodes them).
func Object(v any) (map[string]any, error) {
	return k8sruntime.DefaultUnstructuredConverter.ToUnstructured(v)
}

// ReadObject reads an object saved as JSON.
func ReadObject(path string) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u.Object, nil
}
