// Package k8sbin only exists so the module has a package; the binaries are its tools.
package k8sbin
