# Bash builtins only: a recursive-descent parser over a token array. Each parse function
# leaves its value in $ret; bash's / truncates toward zero, as the problem wants.
IFS= read -r line
tokens=()
len=${#line}
i=0
while (( i < len )); do
    c=${line:i:1}
    if [[ $c == [0-9] ]]; then
        num=""
        while (( i < len )) && [[ ${line:i:1} == [0-9] ]]; do
            num+=${line:i:1}
            i=$(( i + 1 ))
        done
        tokens+=("$num")
        continue
    fi
    case $c in
        [-+*/\(\)]) tokens+=("$c") ;;
    esac
    i=$(( i + 1 ))
done
pos=0

parse_expr() {
    local v op
    parse_term
    v=$ret
    while [[ ${tokens[pos]} == "+" || ${tokens[pos]} == "-" ]]; do
        op=${tokens[pos]}
        pos=$(( pos + 1 ))
        parse_term
        if [[ $op == "+" ]]; then v=$(( v + ret )); else v=$(( v - ret )); fi
    done
    ret=$v
}

parse_term() {
    local v op
    parse_factor
    v=$ret
    while [[ ${tokens[pos]} == "*" || ${tokens[pos]} == "/" ]]; do
        op=${tokens[pos]}
        pos=$(( pos + 1 ))
        parse_factor
        if [[ $op == "*" ]]; then v=$(( v * ret )); else v=$(( v / ret )); fi
    done
    ret=$v
}

parse_factor() {
    local tok=${tokens[pos]}
    pos=$(( pos + 1 ))
    if [[ $tok == "(" ]]; then
        parse_expr
        pos=$(( pos + 1 ))
    else
        ret=$(( 10#$tok ))
    fi
}

parse_expr
printf '%s\n' "$ret"
