// Package promop only exists so the module has a package; the binaries are its tools.
package promop
