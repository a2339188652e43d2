package perf

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The FlowSchemas a WriteCounter installs carry this label (and are removed by it).
const writeCounterLabel = "bench.valkey.io/write-counter"

// writeVerbs are the API verbs that change state, in FlowSchema and in metric spelling.
var (
	writeVerbs       = []string{"create", "update", "patch", "delete", "deletecollection"}
	writeMetricVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true}
)

// WriteCounter counts the API writes of each operator component. The API server's
// request metric has no user label, so each component's ServiceAccount gets two
// FlowSchemas of its own, one for its lease writes (leader election) and one for every
// other write; apiserver_flowcontrol_dispatched_requests_total, labelled by FlowSchema,
// then counts them exactly. The schemas use the priority level the service-accounts
// schema uses (workload-low), so requests are handled as before. Snapshots also read
// apiserver_request_total's writes by resource, from every client of the cluster.
type WriteCounter struct {
	client client.Client
	rest   rest.Interface
	// schemas maps a FlowSchema name to the component and kind it counts.
	schemas map[string]schemaOf
}

type schemaOf struct{ component, kind string }

// Kinds of writes a WriteCounter tells apart.
const (
	WritesLeases = "leases"
	WritesOther  = "other"
)

// InstallWriteCounter installs the FlowSchemas for every operator Deployment in
// namespace (removing those of an earlier run first). restc reaches the API server's
// /metrics (a clientset's CoreV1().RESTClient() with admin credentials).
func InstallWriteCounter(ctx context.Context, c client.Client, restc rest.Interface, namespace string) (*WriteCounter, error) {
	w := &WriteCounter{client: c, rest: restc, schemas: map[string]schemaOf{}}
	if err := w.Remove(ctx); err != nil {
		return nil, err
	}
	if err := w.Cover(ctx, namespace); err != nil {
		return nil, err
	}
	if len(w.schemas) == 0 {
		return nil, fmt.Errorf("no operator Deployment with a %s label in %s", ComponentLabel, namespace)
	}
	return w, nil
}

// Cover installs the FlowSchemas of the operator Deployments in namespace that have
// none yet: after the chart's controllers.combined changed, the manager (or the
// controllers run apart) runs as a ServiceAccount of its own. The schemas of the
// Deployments that went stay and count nothing more.
func (w *WriteCounter) Cover(ctx context.Context, namespace string) error {
	var deps appsv1.DeploymentList
	if err := w.client.List(ctx, &deps, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("list the operator's deployments: %w", err)
	}
	for _, d := range deps.Items {
		comp, sa := d.Labels[ComponentLabel], d.Spec.Template.Spec.ServiceAccountName
		if comp == "" || sa == "" {
			continue
		}
		if err := w.CoverAccount(ctx, comp, namespace, sa); err != nil {
			return err
		}
	}
	return nil
}

// NewWriteCounter returns a WriteCounter that counts nothing yet (CoverAccount adds
// what it counts), after removing the FlowSchemas of an earlier run: for an operator
// that runs without Deployments (e2e/standin runs its binaries as host processes).
func NewWriteCounter(ctx context.Context, c client.Client, restc rest.Interface) (*WriteCounter, error) {
	w := &WriteCounter{client: c, rest: restc, schemas: map[string]schemaOf{}}
	if err := w.Remove(ctx); err != nil {
		return nil, err
	}
	return w, nil
}

// CoverAccount counts the writes of ServiceAccount sa in namespace as component's,
// unless the component's writes are counted already.
func (w *WriteCounter) CoverAccount(ctx context.Context, component, namespace, sa string) error {
	if w.covers(component) {
		return nil
	}
	for _, kind := range []string{WritesLeases, WritesOther} {
		fs := flowSchema(component, kind, namespace, sa, int32(20+len(w.schemas)))
		if err := w.client.Create(ctx, fs); err != nil {
			return fmt.Errorf("create FlowSchema %s: %w", fs.Name, err)
		}
		w.schemas[fs.Name] = schemaOf{component: component, kind: kind}
	}
	return nil
}

// covers reports whether a component's writes are counted already.
func (w *WriteCounter) covers(component string) bool {
	for _, of := range w.schemas {
		if of.component == component {
			return true
		}
	}
	return false
}

// flowSchema matches the writes of one ServiceAccount: lease writes, or every other one
// (the leases schema comes first: a lower precedence is matched first).
func flowSchema(component, kind, namespace, sa string, precedence int32) *flowcontrolv1.FlowSchema {
	rule := flowcontrolv1.ResourcePolicyRule{Verbs: writeVerbs, APIGroups: []string{"*"}, Resources: []string{"*"},
		ClusterScope: true, Namespaces: []string{"*"}}
	if kind == WritesLeases {
		rule.APIGroups, rule.Resources = []string{"coordination.k8s.io"}, []string{"leases"}
	}
	return &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{
			Name:   "bench-" + component + "-" + kind,
			Labels: map[string]string{writeCounterLabel: "true"},
		},
		Spec: flowcontrolv1.FlowSchemaSpec{
			PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "workload-low"},
			MatchingPrecedence:         precedence,
			DistinguisherMethod:        &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects: []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindServiceAccount,
					ServiceAccount: &flowcontrolv1.ServiceAccountSubject{Namespace: namespace, Name: sa}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{rule},
			}},
		},
	}
}

// Remove deletes the FlowSchemas of any WriteCounter.
func (w *WriteCounter) Remove(ctx context.Context) error {
	err := w.client.DeleteAllOf(ctx, &flowcontrolv1.FlowSchema{}, client.MatchingLabels{writeCounterLabel: "true"})
	if err != nil {
		return fmt.Errorf("remove the write-counting FlowSchemas: %w", err)
	}
	return nil
}

// WriteSnapshot is the state of the write counters at one time.
type WriteSnapshot struct {
	At time.Time
	// Component maps component -> kind (WritesLeases, WritesOther) -> writes so far.
	Component map[string]map[string]float64
	// ByResource maps "VERB group/resource[/subresource]" to writes so far, by anyone.
	ByResource map[string]float64
}

// Snapshot reads the API server's metrics once.
func (w *WriteCounter) Snapshot(ctx context.Context) (WriteSnapshot, error) {
	raw, err := w.rest.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return WriteSnapshot{}, fmt.Errorf("read the API server's metrics: %w", err)
	}
	series, err := ParseMetrics(bytes.NewReader(raw))
	if err != nil {
		return WriteSnapshot{}, err
	}
	s := WriteSnapshot{At: time.Now(), Component: map[string]map[string]float64{}, ByResource: map[string]float64{}}
	for _, of := range w.schemas {
		if s.Component[of.component] == nil {
			s.Component[of.component] = map[string]float64{WritesLeases: 0, WritesOther: 0}
		}
	}
	for _, x := range series {
		switch x.Name {
		case "apiserver_flowcontrol_dispatched_requests_total":
			if of, ok := w.schemas[x.Labels["flow_schema"]]; ok {
				s.Component[of.component][of.kind] += x.Value
			}
		case "apiserver_request_total":
			if writeMetricVerbs[x.Labels["verb"]] {
				s.ByResource[resourceKey(x.Labels)] += x.Value
			}
		}
	}
	return s, nil
}

// resourceKey is "VERB group/resource[/subresource]" ("core" for the empty group).
func resourceKey(l map[string]string) string {
	group := l["group"]
	if group == "" {
		group = "core"
	}
	key := l["verb"] + " " + group + "/" + l["resource"]
	if l["subresource"] != "" {
		key += "/" + l["subresource"]
	}
	return key
}

// WriteRates are writes per minute between two snapshots.
type WriteRates struct {
	Seconds float64 `json:"window_seconds"`
	// Component maps component -> kind -> writes per minute.
	Component map[string]map[string]float64 `json:"by_component"`
	// ByResource maps "VERB group/resource" to writes per minute by any client (only
	// those that changed).
	ByResource map[string]float64 `json:"by_resource_all_clients"`
}

// Rates returns the writes per minute from earlier to s.
func (s WriteSnapshot) Rates(earlier WriteSnapshot) WriteRates {
	secs := s.At.Sub(earlier.At).Seconds()
	perMin := func(d float64) float64 { return Ratio(d*60, secs) }
	r := WriteRates{Seconds: secs, Component: map[string]map[string]float64{}, ByResource: map[string]float64{}}
	for comp, kinds := range s.Component {
		r.Component[comp] = map[string]float64{}
		for kind, v := range kinds {
			r.Component[comp][kind] = perMin(v - earlier.Component[comp][kind])
		}
	}
	for k, v := range s.ByResource {
		if d := v - earlier.ByResource[k]; d > 0 {
			r.ByResource[k] = perMin(d)
		}
	}
	return r
}

// Total sums the rates of one kind over the components.
func (r WriteRates) Total(kind string) float64 {
	var t float64
	for _, kinds := range r.Component {
		t += kinds[kind]
	}
	return t
}

// Describe lists the non-zero rates of one kind by component ("cluster-controller 2.0/min").
func (r WriteRates) Describe(kind string) string {
	var parts []string
	for _, comp := range SortedKeys(r.Component) {
		if v := r.Component[comp][kind]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", comp, FormatValue(v, UnitPerMin)))
		}
	}
	return strings.Join(parts, ", ")
}

// Delta returns the writes per component and kind from earlier to s.
func (s WriteSnapshot) Delta(earlier WriteSnapshot) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for comp, kinds := range s.Component {
		out[comp] = map[string]float64{}
		for kind, v := range kinds {
			out[comp][kind] = v - earlier.Component[comp][kind]
		}
	}
	return out
}
