import FlowProtocol

public typealias Presentation = Flowbus_V1_Presentation
public typealias PresentationComponent = Flowbus_V1_Component

/// Builders for the generic presentation a view model publishes (presentation.proto): short
/// enough that a screen reads as its layout.
extension Flowbus_V1_Presentation {
    public init(title: String = "", _ components: [PresentationComponent], alertButtons: [Flowbus_V1_ActionRef] = []) {
        self.init()
        self.title = title
        self.components = components
        self.alertButtons = alertButtons
    }
}

extension Flowbus_V1_Component {
    public static func text(_ text: String, style: Flowbus_V1_Text.Style = .body) -> Self {
        var value = Flowbus_V1_Text()
        value.text = text
        value.style = style
        var component = Self()
        component.text = value
        return component
    }

    public static func heading(_ text: String) -> Self { .text(text, style: .heading) }
    public static func muted(_ text: String) -> Self { .text(text, style: .muted) }

    public static func field(
        _ name: String, label: String, kind: Flowbus_V1_Field.Kind = .text, maxLength: Int = 0,
        options: [(id: String, label: String)] = [], hint: String = ""
    ) -> Self {
        var field = Flowbus_V1_Field()
        field.name = name
        field.label = label
        field.kind = kind
        field.maxLength = UInt32(max(0, maxLength))
        field.options = options.map { option in
            var value = Flowbus_V1_Option()
            value.id = option.id
            value.label = option.label
            return value
        }
        field.hint = hint
        var component = Self()
        component.field = field
        return component
    }

    public static func buttons(_ buttons: [Flowbus_V1_ActionRef]) -> Self {
        var value = Flowbus_V1_Buttons()
        value.buttons = buttons
        var component = Self()
        component.buttons = value
        return component
    }

    public static func buttons(_ actions: String...) -> Self {
        .buttons(actions.map { Flowbus_V1_ActionRef.to($0) })
    }

    public static func collection(
        _ id: String, title: String, style: Flowbus_V1_Collection.Style = .list, items: [Flowbus_V1_Item],
        action: String = "", field: String = "", emptyText: String = ""
    ) -> Self {
        var value = Flowbus_V1_Collection()
        value.id = id
        value.title = title
        value.style = style
        value.items = items
        value.action = action
        value.field = field
        value.emptyText = emptyText
        var component = Self()
        component.collection = value
        return component
    }

    public static func summary(_ label: String, _ value: String) -> Self {
        var summary = Flowbus_V1_Summary()
        summary.label = label
        summary.value = value
        var component = Self()
        component.summary = summary
        return component
    }

    public static func notice(_ text: String) -> Self {
        var notice = Flowbus_V1_Notice()
        notice.text = text
        var component = Self()
        component.notice = notice
        return component
    }
}

extension Flowbus_V1_ActionRef {
    /// A button for `action`, optionally with its own label and field values.
    public static func to(_ action: String, label: String = "", values: [String: String] = [:]) -> Self {
        var ref = Self()
        ref.action = action
        ref.label = label
        ref.values = values
        return ref
    }
}

extension Flowbus_V1_Item {
    public init(id: String, title: String, subtitle: String = "", detail: String = "") {
        self.init()
        self.id = id
        self.title = title
        self.subtitle = subtitle
        self.detail = detail
    }
}
