"""The Pulumi ComponentResources: the only modules here that import pulumi."""
