"""MkDocs hooks of the documentation site (mkdocs.yml's ``hooks``): code, so it lives outside docs/."""
