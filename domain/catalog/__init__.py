"""The application catalog: Go-templated Fuzzfiles with their values files, read from catalog sources.

`render` is the Go text/template subset (domain.catalog.gotemplate); `build` reads one template's files,
`render_fuzzfile` turns a template and a person's values into a Fuzzfile. The `CatalogSource` aggregate
(domain.catalog.source) records where a tenant's templates come from.
"""

from domain.catalog.budget import Budget, BudgetExceeded
from domain.catalog.gofuncs import Clock, RenderError, TemplateFailure
from domain.catalog.gotemplate import render
from domain.catalog.inputs import CatalogError, Input, fill, parse_inputs, read_values
from domain.catalog.template import (
           Rendered,
           Template,
           TemplateFiles,
           build,
           detail,
           form_groups,
           matches,
           render_fuzzfile,
           summary,
)

__all__ = ["Budget", "BudgetExceeded",
           "CatalogError", "Clock", "Input", "RenderError", "Rendered", "Template", "TemplateFailure", "TemplateFiles",
           "build", "detail", "fill", "form_groups", "matches", "parse_inputs", "read_values", "render",
           "render_fuzzfile", "summary"]
