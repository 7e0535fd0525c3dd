/// The manifest `flowbus up` runs when none is given: the example plugin, twice, so that
/// load sharing and supervision can be seen at once.
public enum DefaultManifest {
    public static let yaml = """
    # Flowbus's embedded default manifest: the example echo plugin (MDP service flowbus.echo,
    # Clone keys under /demo/echo/) in two replicas of four MDP worker lanes each.
    supervisor:
      intensity: 5
      period: 10s
      backoff: { initial: 50ms, max: 2s }
      shutdown_timeout: 5s
    plugins:
      - name: echo
        command: flowbus-echo
        args: ["--lanes", "4"]
        restart: permanent
        replicas: 2
    """
}
