package codec

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// TestEveryExportedNameIsDocumented fails when the package comment or the
// doc comment of an exported name is missing.
func TestEveryExportedNameIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/troupe-mesh/troupe/codec")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pkg.Doc, "Package codec ") {
		t.Error("missing package comment")
	}
	check := func(kind, name, text string) {
		if strings.TrimSpace(text) == "" {
			t.Errorf("%s %s has no doc comment", kind, name)
		}
	}
	for _, f := range pkg.Funcs {
		check("func", f.Name, f.Doc)
	}
	for _, typ := range pkg.Types {
		check("type", typ.Name, typ.Doc)
		for _, f := range typ.Funcs {
			check("func", f.Name, f.Doc)
		}
		for _, m := range typ.Methods {
			check("method", typ.Name+"."+m.Name, m.Doc)
		}
	}
	for _, v := range append(pkg.Consts, pkg.Vars...) {
		if v.Doc == "" {
			// Each name in an undocumented group needs its own comment.
			for _, spec := range v.Decl.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, n := range vs.Names {
					if n.IsExported() && vs.Doc == nil {
						t.Errorf("%s has no doc comment", n.Name)
					}
				}
			}
		}
	}
}
