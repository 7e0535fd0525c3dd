import SwiftProtobuf

/// Every message type of `Protocols/flowbus/v1`, by the name `Envelope.kind` uses,
/// so a tool (tap, the fault injector) can decode any payload it sees.
public enum PayloadKinds {
    public static let all: [any SwiftProtobuf.Message.Type] = [
        Flowbus_V1_Envelope.self,
        Flowbus_V1_Error.self,
        Flowbus_V1_Intent.self,
        Flowbus_V1_IntentReply.self,
        Flowbus_V1_ViewState.self,
        Flowbus_V1_Screen.self,
        Flowbus_V1_Navigation.self,
        Flowbus_V1_Echo.self,
        Flowbus_V1_Action.self,
        Flowbus_V1_Presentation.self,
        Flowbus_V1_NavigationOp.self,
        Flowbus_V1_CoordinatorCall.self,
        Flowbus_V1_CoordinatorReply.self,
        Flowbus_V1_CoordinatorInstance.self,
        Flowbus_V1_SessionRecord.self,
        Flowbus_V1_ServiceCall.self,
        Flowbus_V1_ServiceReply.self,
    ]

    /// The type whose full protobuf name is `kind`, e.g. "flowbus.v1.Intent".
    public static func type(named kind: String) -> (any SwiftProtobuf.Message.Type)? {
        all.first { $0.protoMessageName == kind }
    }
}
