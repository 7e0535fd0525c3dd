/// One method of a service as the handlers accept it: its name and the arguments it needs.
/// The handlers answer an unknown method or a missing argument from these, before any service runs.
struct ServiceMethod: Sendable {
    let name: String
    /// Arguments that must be present and not empty.
    let required: [String]
    /// Arguments that may be left out (read as empty).
    let optional: [String]

    init(_ name: String, required: [String] = [], optional: [String] = []) {
        self.name = name
        self.required = required
        self.optional = optional
    }

    /// How to call it from the command line, e.g. `flowbus call svc.photos like id=… user=…`.
    func usage(service: String) -> String {
        (["flowbus call", service, name] + required.map { "\($0)=…" } + optional.map { "[\($0)=…]" }).joined(separator: " ")
    }
}
