import HTTPTypes

extension HTTPFields {
    /// The value of a header, as `self[name]` gives it (every field of that name joined with ", "), without
    /// building a new string in the usual case of one field: the snapshot route reads several per request.
    func value(_ name: HTTPField.Name) -> String? {
        var found: String?
        for field in self where field.name == name {
            if found != nil { return self[name] }
            found = field.value
        }
        return found
    }
}
