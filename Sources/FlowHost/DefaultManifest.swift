/// The manifest `flowbus up` runs when none is given: the whole sample app of APP.md, one
/// process per coordinator and per view-model worker, plus the in-memory services.
public enum DefaultManifest {
    public static let yaml = """
    # Flowbus's embedded default manifest: the sample app of APP.md. Plugins start in this
    # order and stop in reverse: services first, then view-model workers, then coordinators
    # (the app coordinator, which owns every session's navigation, first among them).
    # Raise `replicas` of a view model to share its load between processes.
    supervisor:
      intensity: 5
      period: 10s
      backoff: { initial: 50ms, max: 2s }
      shutdown_timeout: 5s
    plugins:
      - name: services
        command: flowbus-services
        args: ["--lanes", "4"]
        restart: permanent
      - name: vm-signin
        command: flowbus-viewmodel
        args: ["--screen", "signin"]
        restart: permanent
      - name: vm-signup
        command: flowbus-viewmodel
        args: ["--screen", "signup"]
        restart: permanent
      - name: vm-emailverification
        command: flowbus-viewmodel
        args: ["--screen", "emailverification"]
        restart: permanent
      - name: vm-forgotpassword
        command: flowbus-viewmodel
        args: ["--screen", "forgotpassword"]
        restart: permanent
      - name: vm-home
        command: flowbus-viewmodel
        args: ["--screen", "home"]
        restart: permanent
      - name: vm-details
        command: flowbus-viewmodel
        args: ["--screen", "details"]
        restart: permanent
      - name: vm-likes
        command: flowbus-viewmodel
        args: ["--screen", "likes"]
        restart: permanent
      - name: vm-settings
        command: flowbus-viewmodel
        args: ["--screen", "settings"]
        restart: permanent
      - name: vm-changepassword
        command: flowbus-viewmodel
        args: ["--screen", "changepassword"]
        restart: permanent
      - name: vm-expenses
        command: flowbus-viewmodel
        args: ["--screen", "expenses"]
        restart: permanent
      - name: coord-app
        command: flowbus-coordinator
        args: ["--coordinator", "app"]
        restart: permanent
      - name: coord-auth
        command: flowbus-coordinator
        args: ["--coordinator", "auth"]
        restart: permanent
      - name: coord-signup
        command: flowbus-coordinator
        args: ["--coordinator", "signup"]
        restart: permanent
      - name: coord-main
        command: flowbus-coordinator
        args: ["--coordinator", "main"]
        restart: permanent
      - name: coord-home
        command: flowbus-coordinator
        args: ["--coordinator", "home"]
        restart: permanent
      - name: coord-settings
        command: flowbus-coordinator
        args: ["--coordinator", "settings"]
        restart: permanent
      - name: coord-expenses
        command: flowbus-coordinator
        args: ["--coordinator", "expenses"]
        restart: permanent
    """
}
