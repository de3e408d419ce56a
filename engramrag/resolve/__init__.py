"""Entity resolution: kind compatibility, machine candidates, and the clusters that people's verdicts allow."""
