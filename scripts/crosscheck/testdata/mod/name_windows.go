package mod

// On windows, name is missing: a build for windows fails, as the check must.
