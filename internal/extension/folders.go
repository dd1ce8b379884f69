package extension

// ExtensionFolders lists the folder of every installed extension and the
// source folder of every linked one: code that tools of other extensions
// must never change, since it runs later with its own extension's
// permissions. The sandbox keeps them read-only to every tool.
func (s *Store) ExtensionFolders() ([]string, error) {
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	out := []string{s.Dir()}
	for _, in := range list {
		out = append(out, in.Entry)
		if in.Extension != nil && in.Extension.Dir != "" {
			out = append(out, in.Extension.Dir)
		} else if in.Metadata != nil && in.Metadata.Type == SourceLink && in.Metadata.Source != "" {
			out = append(out, in.Metadata.Source)
		}
	}
	return out, nil
}
