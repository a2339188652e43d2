package standin

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// mount is a container's mount point and the host directory that stands for it.
type mount struct{ path, host string }

// mounts maps the container's volume mounts to the host directories of the pod's
// volumes (volumes maps a volume name to its directory), longest path first so that a
// mount inside another wins.
func mounts(c *corev1.Container, volumes map[string]string) ([]mount, error) {
	var out []mount
	for _, m := range c.VolumeMounts {
		dir, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("container %s mounts volume %s, which the pod does not have", c.Name, m.Name)
		}
		out = append(out, mount{path: filepath.Clean(m.MountPath), host: filepath.Join(dir, m.SubPath)})
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out, nil
}

// remapPath turns a path inside the container into the host path it stands for; a
// path under no mount is returned as it is.
func remapPath(p string, ms []mount) string {
	for _, m := range ms {
		if p == m.path {
			return m.host
		}
		if strings.HasPrefix(p, m.path+"/") {
			return m.host + p[len(m.path):]
		}
	}
	return p
}

// pathToken is an absolute path in a config file or an argument: at the start, after
// white space or a quote, up to white space or a quote.
var pathToken = regexp.MustCompile(`(^|[\s"'])(/[^\s"']*)`)

// remapText remaps every absolute path in text (a config file, a script argument).
func remapText(text string, ms []mount) string {
	return pathToken.ReplaceAllStringFunc(text, func(tok string) string {
		lead := ""
		if tok != "" && tok[0] != '/' {
			lead, tok = tok[:1], tok[1:]
		}
		return lead + remapPath(tok, ms)
	})
}

// ownAddress makes a config file's server listen on the pod's address only and send
// from it, as a server in a pod's network namespace does: every "bind" line becomes
// "bind IP" followed by "bind-source-addr IP" (a pod has its own address; on the
// shared host the servers would otherwise all listen on every address).
func ownAddress(text, ip string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "bind" {
			lines[i] = "bind " + ip + "\nbind-source-addr " + ip
		}
	}
	return strings.Join(lines, "\n")
}

// volumeDirs returns the host directory of each of the pod's volumes: dir/NAME, or
// for a claim a directory per claim under claims, kept across pods as a bound volume
// is.
func volumeDirs(pod *corev1.Pod, dir, claims string) map[string]string {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil {
			out[v.Name] = filepath.Join(claims, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			continue
		}
		out[v.Name] = filepath.Join(dir, v.Name)
	}
	return out
}

// writeVolumes fills the volumes' directories (dirs, from volumeDirs). ConfigMap and
// Secret volumes (plain or projected) are written from the objects as the kubelet
// projects them, once, at the pod's start (the kubelet also follows later changes: the
// stand-in does not); emptyDirs and claims are directories. Files from ConfigMaps go
// through rewrite (the server's config: its paths and its address).
func writeVolumes(ctx context.Context, c client.Reader, pod *corev1.Pod, dirs map[string]string, rewrite func(string) string) error {
	for _, v := range pod.Spec.Volumes {
		vdir := dirs[v.Name]
		var sources []corev1.VolumeProjection
		switch {
		case v.Projected != nil:
			sources = v.Projected.Sources
		case v.ConfigMap != nil:
			sources = []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items, Optional: v.ConfigMap.Optional}}}
		case v.Secret != nil:
			sources = []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName}, Items: v.Secret.Items, Optional: v.Secret.Optional}}}
		}
		for _, src := range sources {
			if err := projectSource(ctx, c, pod.Namespace, vdir, src, rewrite); err != nil {
				return fmt.Errorf("volume %s: %w", v.Name, err)
			}
		}
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return nil
}

// projectSource writes one ConfigMap or Secret source into dir: its items, or every key
// when it names none. A missing object or key that is not optional is an error, as the
// kubelet holds the pod in ContainerCreating then.
func projectSource(ctx context.Context, c client.Reader, namespace, dir string, src corev1.VolumeProjection, rewrite func(string) string) error {
	var (
		data     map[string][]byte
		items    []corev1.KeyToPath
		optional bool
		fromCM   bool
	)
	switch {
	case src.ConfigMap != nil:
		var cm corev1.ConfigMap
		optional, items, fromCM = ptrTrue(src.ConfigMap.Optional), src.ConfigMap.Items, true
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: src.ConfigMap.Name}, &cm); err != nil {
			if optional && client.IgnoreNotFound(err) == nil {
				return nil
			}
			return fmt.Errorf("read ConfigMap %s: %w", src.ConfigMap.Name, err)
		}
		data = map[string][]byte{}
		for k, v := range cm.Data {
			data[k] = []byte(v)
		}
		for k, v := range cm.BinaryData {
			data[k] = v
		}
	case src.Secret != nil:
		var s corev1.Secret
		optional, items = ptrTrue(src.Secret.Optional), src.Secret.Items
		if err := c.Get(ctx, types.NamespacedName{Namespace: namespace, Name: src.Secret.Name}, &s); err != nil {
			if optional && client.IgnoreNotFound(err) == nil {
				return nil
			}
			return fmt.Errorf("read Secret %s: %w", src.Secret.Name, err)
		}
		data = s.Data
	default:
		return nil // downward API and token projections: nothing the servers read
	}
	if len(items) == 0 {
		for k := range data {
			items = append(items, corev1.KeyToPath{Key: k, Path: k})
		}
	}
	for _, it := range items {
		b, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("no key %s", it.Key)
		}
		if fromCM && rewrite != nil {
			b = []byte(rewrite(string(b)))
		}
		path := filepath.Join(dir, it.Path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func ptrTrue(b *bool) bool { return b != nil && *b }
