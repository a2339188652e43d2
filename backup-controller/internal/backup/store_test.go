package backup

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/valkey-operator/valkey-operator/api/v1alpha1"
)

// A refusal by the endpoint policy names the field the endpoint is written in and its
// value before the Job's words; other states are left as they are.
func TestNamingEndpoint(t *testing.T) {
	store := &v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "b", Endpoint: "http://s3.example.com"}}
	aws := &v1alpha1.ObjectStoreSpec{S3: &v1alpha1.S3Spec{Bucket: "b", Region: "eu-west-1"}}
	refusal := "connect to s3.example.com:80 (resolved to 127.0.0.1:80): loopback address (127.0.0.0/8) refused by the operator's object-store endpoint policy"
	byPath := &v1alpha1.DataSource{Path: "p/b-1", ObjectStore: store}
	byName := &v1alpha1.DataSource{BackupName: "nightly"}
	cases := []struct {
		name   string
		source *v1alpha1.DataSource
		store  *v1alpha1.ObjectStoreSpec
		in     restoreState
		want   string
	}{
		{name: "a data source by path", source: byPath, store: store,
			in:   restoreState{reason: v1alpha1.ReasonEndpointRefused, message: refusal},
			want: `spec.dataSource.objectStore.s3.endpoint "http://s3.example.com": ` + refusal},
		{name: "a data source by backup name", source: byName, store: store,
			in:   restoreState{reason: v1alpha1.ReasonEndpointRefused, message: refusal},
			want: `ValkeyBackup nightly spec.objectStore.s3.endpoint "http://s3.example.com": ` + refusal},
		{name: "AWS S3, no endpoint", source: byName, store: aws,
			in:   restoreState{reason: v1alpha1.ReasonEndpointRefused, message: refusal},
			want: `ValkeyBackup nightly spec.objectStore.s3.endpoint (empty: AWS S3 of eu-west-1): ` + refusal},
		{name: "another reason", source: byPath, store: store,
			in:   restoreState{reason: v1alpha1.ReasonNotFound, message: "no manifest"},
			want: "no manifest"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vc := &v1alpha1.ValkeyCluster{ObjectMeta: metav1.ObjectMeta{Name: "vk"}, Spec: v1alpha1.ValkeyClusterSpec{DataSource: tc.source}}
			got := namingEndpoint(tc.in, vc, tc.store)
			if got.message != tc.want || got.reason != tc.in.reason {
				t.Errorf("got %s %q, want %s %q", got.reason, got.message, tc.in.reason, tc.want)
			}
		})
	}
}
