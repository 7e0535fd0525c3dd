import ArgumentParser
import FlowClient
import FlowProtocol
import Foundation

struct Call: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Calls a service on the bus (a ServiceCall to an MDP service) and prints its reply.",
        discussion: """
        Any app's services answer it, e.g. the demo's mail outbox (there is no real e-mail):
          flowbus call svc.mail outbox email=new@example.com

        The reply's result values print one per line; a payload prints as JSON when its app \
        published its schema, else as its kind and size.
        """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The MDP service, e.g. svc.mail.")
    var service: String

    @Argument(help: "The method, e.g. outbox.")
    var method: String

    @Argument(help: "Arguments as NAME=VALUE.")
    var arguments: [String] = []

    @Flag(name: .long, help: "Print the reply as JSON.")
    var json = false

    func validate() throws {
        do {
            _ = try ServiceName(service)
        } catch {
            throw ValidationError("\(error)")
        }
        for argument in arguments where !argument.contains("=") || argument.hasPrefix("=") {
            throw ValidationError("the argument \"\(argument)\" is not NAME=VALUE; write e.g. email=new@example.com")
        }
    }

    func run() async throws {
        global.bootstrapLogging()
        var args: [String: String] = [:]
        for argument in arguments {
            let parts = argument.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            args[String(parts[0])] = String(parts[1])
        }
        let endpoints = try BusEndpoints.announced(by: global.runDirectory)
        let connection = try BusConnection(endpoints: endpoints)
        defer { connection.stop() }
        let reply = try await connection.serviceCall(service, method: method, args: args)
        var payload: [String: Any]?
        if !reply.payloadKind.isEmpty {
            let schemas = (try? await BusSnapshot.schemas(endpoints, timeout: .seconds(2))) ?? [:]
            payload = PayloadReader(schemas: schemas.values).object(kind: reply.payloadKind, bytes: reply.payload)
        }
        if json {
            var object: [String: Any] = ["result": reply.result]
            if !reply.refusal.isEmpty { object["refusal"] = reply.refusal }
            if !reply.payloadKind.isEmpty { object["payloadKind"] = reply.payloadKind }
            if let payload { object["payload"] = payload }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
            return
        }
        if !reply.refusal.isEmpty { print("refused: \(reply.refusal)") }
        for (key, value) in reply.result.sorted(by: { Self.naturalOrder($0.key, $1.key) }) { print("\(key) = \(value)") }
        if !reply.payloadKind.isEmpty {
            if let payload, let data = try? JSONSerialization.data(withJSONObject: payload, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]) {
                print("payload \(reply.payloadKind):")
                print(String(decoding: data, as: UTF8.self))
            } else {
                print("payload \(reply.payloadKind) (\(reply.payload.count) bytes; its app published no schema at /schema/\(AppSchema.package(of: reply.payloadKind)))")
            }
        }
        if reply.refusal.isEmpty, reply.result.isEmpty, reply.payloadKind.isEmpty { print("\(service) \(method): done (an empty reply)") }
    }

    /// `mail.2.body` before `mail.10.body`: numbers compare as numbers.
    static func naturalOrder(_ left: String, _ right: String) -> Bool {
        left.compare(right, options: .numeric) == .orderedAscending
    }
}
