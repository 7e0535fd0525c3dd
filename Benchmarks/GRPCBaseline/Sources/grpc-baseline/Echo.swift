import GRPCCore

/// The echo service `flowbus.bench.Echo`, without protobuf: messages are plain byte arrays, so
/// what is measured is gRPC's own path (HTTP/2 framing, headers, the async stream machinery)
/// rather than message encoding. The payload is 16 bytes, as in flowbus-bench's mdp-rtt.
enum Echo {
    static let service = ServiceDescriptor(fullyQualifiedService: "flowbus.bench.Echo")
    /// One request, one reply.
    static let unary = MethodDescriptor(service: service, method: "Unary", type: .unary)
    /// Every message the client sends comes back on the same stream.
    static let stream = MethodDescriptor(service: service, method: "Stream", type: .bidirectionalStreaming)
}

/// Messages are their own bytes: serializing copies them into the transport's buffer type.
struct ByteSerializer: MessageSerializer {
    func serialize<Bytes: GRPCContiguousBytes>(_ message: [UInt8]) throws -> Bytes {
        Bytes(message)
    }
}

/// The transport's bytes, copied out into an array.
struct ByteDeserializer: MessageDeserializer {
    func deserialize<Bytes: GRPCContiguousBytes>(_ serializedMessageBytes: Bytes) throws -> [UInt8] {
        serializedMessageBytes.withUnsafeBytes { [UInt8]($0) }
    }
}

/// The server side: both methods send back what they receive.
struct EchoService: RegistrableRPCService {
    func registerMethods<Transport: ServerTransport>(with router: inout RPCRouter<Transport>) {
        router.registerHandler(
            forMethod: Echo.unary, deserializer: ByteDeserializer(), serializer: ByteSerializer()
        ) { request, _ in
            let single = try await ServerRequest(stream: request)
            return StreamingServerResponse(single: ServerResponse(message: single.message))
        }
        router.registerHandler(
            forMethod: Echo.stream, deserializer: ByteDeserializer(), serializer: ByteSerializer()
        ) { request, _ in
            StreamingServerResponse(of: [UInt8].self) { writer in
                for try await message in request.messages {
                    try await writer.write(message)
                }
                return [:]
            }
        }
    }
}
